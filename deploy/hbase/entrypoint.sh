#!/bin/bash
# Starts HBase standalone in the foreground: master, one region server and
# ZooKeeper in one JVM, data under $HBASE_DATA_DIR (a volume), logs on stdout.
#
# Clients find the region server by the host name HBase advertises, so
# HBASE_HOSTNAME must resolve to this container wherever clients run. The
# default, the container's own host name, is right for clients on the same
# Compose network when the service sets `hostname:` to its service name.
#
# Environment:
#   HBASE_HOSTNAME   advertised host name (default: `hostname`)
#   HBASE_HEAP       JVM heap, -Xmx syntax (default: 1g)
#   HBASE_DATA_DIR   HBase root dir, WALs and ZooKeeper data (default: /var/lib/hbase)
#   HBASE_CONF_DIR   when it holds an hbase-site.xml, that file is used as is
#   HBASE_LOG_LEVEL  log level of org.apache.hadoop.hbase (default: INFO)
set -euo pipefail

host=${HBASE_HOSTNAME:-$(hostname)}
data=${HBASE_DATA_DIR:-/var/lib/hbase}
conf=${HBASE_CONF_DIR:-/etc/hbase}
home=${HBASE_HOME:-/opt/hbase}

if [[ ! -f $conf/hbase-site.xml ]]; then
  conf=$(mktemp -d /tmp/hbase-conf.XXXXXX)
  # Ports are HBase's defaults; ZooKeeper listens on every interface (its
  # standalone default is loopback only, unreachable from other containers).
  cat > "$conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$data/hbase</value></property>
  <property><name>hbase.tmp.dir</name><value>$data/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>$host</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>2181</value></property>
  <property><name>hbase.zookeeper.property.clientPortAddress</name><value>0.0.0.0</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$data/zookeeper</value></property>
  <property><name>hbase.zookeeper.property.maxClientCnxns</name><value>1000</value></property>
  <!-- On a starved machine the master must not lose its own ZooKeeper session
       (it aborts when it does); ZooKeeper caps sessions at 20 ticks. -->
  <property><name>hbase.zookeeper.property.tickTime</name><value>6000</value></property>
  <property><name>zookeeper.session.timeout</name><value>90000</value></property>
  <property><name>hbase.master.port</name><value>16000</value></property>
  <!-- Maven Central's jars lack the web UI's resources (hbase-webapps), so
       the info servers, and the /jmx and /prometheus pages on them, are off. -->
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.port</name><value>16020</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.localcluster.assign.random.ports</name><value>false</value></property>
  <property><name>hbase.master.hostname</name><value>$host</value></property>
  <property><name>hbase.regionserver.hostname</name><value>$host</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>$host</value></property>
  <!-- A local filesystem has no hflush/hsync capabilities to enforce. -->
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
</configuration>
XML
fi

# Beside, not in, the configuration directory: one mounted by the operator
# (an hbase-site.xml of their own) may be read-only or root's.
logconf=$(mktemp -d /tmp/hbase-log.XXXXXX)
cat > "$logconf/log4j.properties" <<PROPS
log4j.rootLogger=INFO,STDOUT
log4j.appender.STDOUT=org.apache.log4j.ConsoleAppender
log4j.appender.STDOUT.layout=org.apache.log4j.PatternLayout
log4j.appender.STDOUT.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=${HBASE_LOG_LEVEL:-INFO}
PROPS

mkdir -p "$data/tmp"

# JDK 17 closes the JDK internals HBase and its shaded Netty reach into.
#
# Java runs as a child of this shell, not in its place: HMaster's main thread
# returns once the servers run, and a container whose first process is a
# thread-group leader that has exited looks like a zombie to Docker, which
# then refuses to stop it. The shell stays PID 1, hands SIGTERM on (HBase
# shuts down cleanly) and exits with Java's status.
java -Xms256m -Xmx"${HBASE_HEAP:-1g}" -XX:+UseG1GC \
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true \
  --add-modules jdk.unsupported \
  --add-opens java.base/java.nio=ALL-UNNAMED \
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED \
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
  --add-opens java.base/java.util=ALL-UNNAMED \
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED \
  --add-exports java.base/sun.net.dns=ALL-UNNAMED \
  --add-exports java.base/sun.net.util=ALL-UNNAMED \
  -Dlog4j.configuration="file:$logconf/log4j.properties" \
  -Dhbase.log.dir=/tmp -Djava.io.tmpdir="$data/tmp" \
  -cp "$conf:$home/lib/*" org.apache.hadoop.hbase.master.HMaster start &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
status=0
# wait returns early when a trapped signal arrives; keep waiting for Java.
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid" && status=0 || status=$?
done
exit "$status"
