#!/usr/bin/env bash
# A real, standalone HBase 2.6.4 on loopback for tests and demos.
#
#   scripts/hbase.sh start    fetch jars (cached), write a fresh config and data
#                             dir, start HBase, wait until a client call works
#   scripts/hbase.sh stop     stop it (SIGTERM, then SIGKILL if it will not go);
#                             its config and data stay until the next start
#   scripts/hbase.sh resume   start the stopped HBase again on the same ports and
#                             data (fault-injection tests: "HBase was down")
#   scripts/hbase.sh status   say whether it runs and where
#   scripts/hbase.sh env      print PROMHBASE_TEST_ZK=... for the running HBase
#
# Everything lives under $HBASE_RUN_DIR (default: .hbase/ in the repository):
# conf/, data/, logs/, hbase.pid and hbase.env. Jars are resolved from Maven
# Central once into $PROMHBASE_CACHE (default ~/.cache/prom-hbase).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=${HBASE_RUN_DIR:-$repo/.hbase}
cache=${PROMHBASE_CACHE:-$HOME/.cache/prom-hbase}
version=2.6.4-hadoop3
start_timeout=${HBASE_START_TIMEOUT:-240}

log() { echo "hbase.sh: $*" >&2; }

classpath() {
  local dir=$cache/hbase-$version
  if [[ -s $dir/classpath.txt && -f $dir/probe/Probe.class ]]; then
    return 0
  fi
  mkdir -p "$dir"
  cat > "$dir/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.promhbase</groupId>
  <artifactId>hbase-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hbase</groupId>
      <artifactId>hbase-server</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
  log "resolving HBase $version from Maven Central into $dir (once)"
  mvn -q -B -f "$dir/pom.xml" dependency:build-classpath \
    -Dmdep.outputFile="$dir/classpath.tmp" -Dmdep.includeScope=runtime >&2
  mv "$dir/classpath.tmp" "$dir/classpath.txt"
  mkdir -p "$dir/probe"
  cp "$repo/scripts/Probe.java" "$dir/probe/Probe.java"
  javac -nowarn -cp "$(cat "$dir/classpath.txt")" -d "$dir/probe" "$dir/probe/Probe.java" >&2
}

jvm_flags=(
  -XX:+UseG1GC
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
  --add-modules jdk.unsupported
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports java.base/sun.net.dns=ALL-UNNAMED
  --add-exports java.base/sun.net.util=ALL-UNNAMED
)

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 30000))
    if port_free "$p" && [[ " ${picked:-} " != *" $p "* ]]; then
      picked="${picked:-} $p"
      echo "$p"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

running_pid() {
  [[ -f $run/hbase.pid ]] || return 1
  local pid
  pid=$(cat "$run/hbase.pid")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q HMaster; then
    echo "$pid"
    return 0
  fi
  return 1
}

do_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$run/hbase.pid" "$run/hbase.env"
    log "not running"
    return 0
  fi
  log "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still running after 30s; killing"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 1
  fi
  rm -f "$run/hbase.pid" "$run/hbase.env"
}

write_config() {
  local zk=$1 master=$2 rs=$3
  mkdir -p "$run/conf" "$run/data" "$run/logs"
  cat > "$run/conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$run/data/hbase</value></property>
  <property><name>hbase.tmp.dir</name><value>$run/data/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zk</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$run/data/zk</value></property>
  <property><name>hbase.zookeeper.property.maxClientCnxns</name><value>1000</value></property>
  <!-- A starved machine (2 cores, many test processes) must not expire the
       master's own ZooKeeper session: ZooKeeper caps sessions at 20 ticks. -->
  <property><name>hbase.zookeeper.property.tickTime</name><value>6000</value></property>
  <property><name>zookeeper.session.timeout</name><value>90000</value></property>
  <property><name>hbase.master.port</name><value>$master</value></property>
  <property><name>hbase.regionserver.port</name><value>$rs</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.localcluster.assign.random.ports</name><value>false</value></property>
  <property><name>hbase.master.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.regionserver.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.balancer.period</name><value>3600000</value></property>
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
</configuration>
XML
  cat > "$run/conf/log4j.properties" <<PROPS
log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$run/logs/hbase.log
log4j.appender.FILE.Append=true
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
PROPS
}

do_start() {
  local mode=${1:-fresh} zk master rs
  if pid=$(running_pid); then
    log "an earlier HBase (pid $pid) is still running; stopping it first"
    do_stop
  fi
  classpath
  local dir=$cache/hbase-$version
  if [[ $mode == resume ]]; then
    [[ -f $run/conf/ports ]] || { log "nothing to resume in $run"; return 1; }
    read -r zk master rs < "$run/conf/ports"
  else
    rm -rf "$run/data" "$run/logs" "$run/conf"
    picked=""
    zk=$(pick_port); master=$(pick_port); rs=$(pick_port)
    write_config "$zk" "$master" "$rs"
    echo "$zk $master $rs" > "$run/conf/ports"
  fi
  local cp="$run/conf:$(cat "$dir/classpath.txt")"
  log "starting HBase $version: zookeeper 127.0.0.1:$zk, master :$master, region server :$rs; logs in $run/logs"
  (
    cd "$run"
    exec setsid java -Xms512m -Xmx${HBASE_HEAP:-1g} "${jvm_flags[@]}" \
      -Dlog4j.configuration="file:$run/conf/log4j.properties" \
      -Dhbase.log.dir="$run/logs" -Djava.io.tmpdir="$run/data/tmp" \
      -cp "$cp" org.apache.hadoop.hbase.master.HMaster start \
      > "$run/logs/stdout.log" 2>&1 < /dev/null
  ) &
  local pid=$!
  echo "$pid" > "$run/hbase.pid"
  local deadline=$((SECONDS + start_timeout))
  mkdir -p "$run/data/tmp"
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "HBase exited during start; last log lines:"
      tail -n 60 "$run/logs/hbase.log" "$run/logs/stdout.log" >&2 || true
      rm -f "$run/hbase.pid"
      return 1
    fi
    if ((SECONDS > deadline)); then
      log "HBase not answering after ${start_timeout}s; last log lines:"
      tail -n 60 "$run/logs/hbase.log" "$run/logs/stdout.log" >&2 || true
      do_stop
      return 1
    fi
    if ! port_free "$rs" && java -cp "$dir/probe:$cp" -Dlog4j.configuration="file:$run/conf/log4j.properties" \
        Probe "127.0.0.1:$zk" >> "$run/logs/probe.log" 2>&1; then
      break
    fi
    sleep 2
  done
  echo "PROMHBASE_TEST_ZK=127.0.0.1:$zk" > "$run/hbase.env"
  log "HBase is up after ${SECONDS}s (PROMHBASE_TEST_ZK=127.0.0.1:$zk)"
}

do_status() {
  if pid=$(running_pid); then
    echo "running: pid $pid, $(cat "$run/hbase.env" 2>/dev/null || echo 'starting')"
  else
    echo "not running"
    return 1
  fi
}

case "${1:-}" in
  start) do_start fresh ;;
  resume) do_start resume ;;
  stop) do_stop ;;
  status) do_status ;;
  env) running_pid >/dev/null && cat "$run/hbase.env" ;;
  classpath) classpath && cat "$cache/hbase-$version/classpath.txt" ;;
  *) echo "usage: $0 start|stop|resume|status|env|classpath" >&2; exit 2 ;;
esac
