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
#   scripts/hbase.sh snapshots ZK COMMAND...
#                             HBase's table snapshots (its Admin API, as the
#                             HBase shell's commands) on the HBase whose
#                             ZooKeeper is ZK (host:port), the commands in
#                             order in one JVM: snapshot TABLE NAME,
#                             restore NAME TABLE (disables the table first,
#                             enables it after), delete NAME
#
# Everything lives under $HBASE_RUN_DIR (default: .hbase/ in the repository):
# conf/, data/, logs/, hbase.pid and hbase.env. Jars are resolved from Maven
# Central once into $PROMHBASE_CACHE (default ~/.cache/prom-hbase).
#
# Cluster mode, for fault tests: ZooKeeper, one HMaster and two HRegionServers,
# each its own JVM on 127.0.0.1, sharing one root directory on the local file
# system (HBase's distributed mode; why each setting, in cluster_config). Its
# run directory defaults to .hbase-cluster/, so it never touches the
# standalone HBase; under it: conf/<process>/, data/, logs/<process>.log,
# <process>.pid, ports and hbase.env. Which server holds which region: ask
# the Go client (hbase.Client.Regions), as the fault tests do.
#
#   scripts/hbase.sh cluster-start     fresh config and data, start all five
#                                      processes, wait until a client call works
#   scripts/hbase.sh cluster-stop      shut the cluster down (master first, then
#                                      stragglers, then ZooKeeper)
#   scripts/hbase.sh cluster-status    one line per process: running, stopped
#                                      (SIGSTOP) or gone
#   scripts/hbase.sh cluster-env       PROMHBASE_TEST_ZK=... and
#                                      PROMHBASE_TEST_CLUSTER_DIR=... lines
#   scripts/hbase.sh rs-addr N         host:port of region server N (1 or 2)
#   scripts/hbase.sh rs-pid N          its pid, if it runs
#   scripts/hbase.sh rs-stop N         freeze it (SIGSTOP): it keeps its TCP
#                                      sockets and answers nothing
#   scripts/hbase.sh rs-cont N         unfreeze it (SIGCONT)
#   scripts/hbase.sh rs-kill N         kill it (SIGKILL)
#   scripts/hbase.sh rs-term N         stop it as an operator does (SIGTERM: its
#                                      shutdown hook closes its regions, flushing
#                                      their memstores, and it exits)
#   scripts/hbase.sh rs-start N        start it again (after a kill, or after it
#                                      exited on its own when resumed too late);
#                                      it gets regions only when moved to it
#   scripts/hbase.sh zk-kill           kill ZooKeeper (SIGKILL)
#   scripts/hbase.sh zk-start          start it again on its port and data
#                                      directory (its sessions survive a short
#                                      outage), once it listens
#   scripts/hbase.sh master-kill       kill the master (SIGKILL)
#   scripts/hbase.sh master-start      start it again, once it has finished
#                                      its initialization as the active master
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${1:-}" in
  cluster-*|rs-*|zk-*|master-*) run=${HBASE_RUN_DIR:-$repo/.hbase-cluster} ;;
  *) run=${HBASE_RUN_DIR:-$repo/.hbase} ;;
esac
cache=${PROMHBASE_CACHE:-$HOME/.cache/prom-hbase}
version=2.6.4-hadoop3
start_timeout=${HBASE_START_TIMEOUT:-240}

log() { echo "hbase.sh: $*" >&2; }

classpath() {
  local dir=$cache/hbase-$version
  if [[ -s $dir/classpath.txt && -f $dir/probe/Probe.class && -f $dir/probe/Snapshots.class ]]; then
    return 0
  fi
  mkdir -p "$dir"
  if [[ ! -s $dir/classpath.txt ]]; then
    resolve_classpath "$dir"
  fi
  # Our Java helpers, compiled against those jars: a cache made before a
  # helper was added gets it here.
  mkdir -p "$dir/probe"
  cp "$repo/scripts/Probe.java" "$repo/scripts/Snapshots.java" "$dir/probe/"
  javac -nowarn -cp "$(cat "$dir/classpath.txt")" -d "$dir/probe" "$dir/probe/Probe.java" "$dir/probe/Snapshots.java" >&2
}

resolve_classpath() {
  local dir=$1
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
}

# snapshots ZK COMMAND...: HBase's Admin snapshot calls
# (scripts/Snapshots.java) on the HBase whose ZooKeeper is ZK.
snapshots() {
  classpath
  local dir=$cache/hbase-$version
  local logconf=$dir/probe/log4j-error.properties
  [[ -f $logconf ]] || printf '%s\n' 'log4j.rootLogger=ERROR, err' 'log4j.appender.err=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.err.target=System.err' 'log4j.appender.err.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.err.layout.ConversionPattern=%d %p %c: %m%n' > "$logconf"
  java "${jvm_flags[@]}" -cp "$dir/probe:$(cat "$dir/classpath.txt")" -Dlog4j.configuration="file:$logconf" Snapshots "$@"
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

# shellcheck source=scripts/ports.sh
source "$repo/scripts/ports.sh"
# shellcheck source=scripts/stop.sh
source "$repo/scripts/stop.sh"

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
  stop_pid "$pid" 30
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
  <!-- Hadoop's default file:// is the checksummed file system, whose
       hflush stops in the JVM's buffers: a WAL edit HBase acknowledged can be
       lost when the process dies. The raw one hands it to the OS (seen on
       this machine: 36 acknowledged rows lost before, none after). -->
  <property><name>fs.file.impl</name><value>org.apache.hadoop.fs.RawLocalFileSystem</value></property>
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
    ports_picked=""
    pick_port zk; pick_port master; pick_port rs
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

# ---- cluster mode -------------------------------------------------------

cluster_procs=(zk master rs1 rs2)

# proc_pid prints the pid of a cluster process that is alive (running or
# frozen); it fails when there is none.
proc_pid() {
  local f=$run/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "$run/conf/$1"; then
    echo "$pid"
    return 0
  fi
  return 1
}

# cluster_config writes one conf dir per process. Why each setting:
# - distributed mode on a local file system, every process sharing the root
#   directory: a region server's WAL is readable by whoever replays it;
#   the local file system has no hflush/hsync, hence the unsafe flag;
# - zookeeper.session.timeout 15 s: a lost server is declared dead in
#   12-16 s, the window the fault tests measure;
# - hbase.rpc.timeout 10 s on the master: a frozen server accepts TCP and
#   answers nothing, and the master's own calls to it (meta updates when it
#   held hbase:meta) would otherwise stall for the default 60 s;
# - a balancer period of an hour: the tests decide where regions go;
# - mintostart 1: the master starts (and restarts) with one server alive;
# - the raw local file system, not Hadoop's default checksummed one: the
#   checksummed stream has no hflush, so what a WAL sync wrote can still be
#   in its buffers in the JVM. A write acknowledged to a client was then
#   not in the file when its server froze, and the WAL split lost it (36
#   acknowledged rows in one trial). The raw stream's hflush reaches the OS.
cluster_config() {
  local zk=$1 master=$2 rs1=$3 rs2=$4 p port
  mkdir -p "$run/data/zk" "$run/logs"
  for p in master rs1 rs2; do
    port=$rs1
    [[ $p == rs2 ]] && port=$rs2
    mkdir -p "$run/conf/$p" "$run/data/tmp-$p"
    cat > "$run/conf/$p/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>true</value></property>
  <property><name>hbase.rootdir</name><value>file://$run/data/hbase</value></property>
  <property><name>hbase.tmp.dir</name><value>$run/data/tmp-$p</value></property>
  <property><name>hbase.fs.tmp.dir</name><value>$run/data/hbase-staging</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>fs.file.impl</name><value>org.apache.hadoop.fs.RawLocalFileSystem</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zk</value></property>
  <property><name>zookeeper.session.timeout</name><value>15000</value></property>
  <property><name>hbase.master.port</name><value>$master</value></property>
  <property><name>hbase.regionserver.port</name><value>$port</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.master.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.balancer.period</name><value>3600000</value></property>
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
$([[ $p == master ]] && echo '  <property><name>hbase.rpc.timeout</name><value>10000</value></property>')
</configuration>
XML
    cat > "$run/conf/$p/log4j.properties" <<PROPS
log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$run/logs/$p.log
log4j.appender.FILE.Append=true
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
PROPS
  done
  mkdir -p "$run/conf/zk"
  cat > "$run/conf/zk/zoo.cfg" <<CFG
tickTime=2000
dataDir=$run/data/zk
clientPort=$zk
clientPortAddress=127.0.0.1
maxClientCnxns=1000
admin.enableServer=false
CFG
  cp "$run/conf/master/log4j.properties" "$run/conf/zk/log4j.properties"
  sed -i "s|$run/logs/master.log|$run/logs/zk.log|" "$run/conf/zk/log4j.properties"
}

# launch starts one cluster process in its own session, its conf dir first on
# the class path (which is also how proc_pid recognises it).
launch() {
  local p=$1 heap=$2 dir=$cache/hbase-$version
  shift 2
  local cp="$run/conf/$p:$(cat "$dir/classpath.txt")"
  (
    cd "$run"
    exec setsid java -Xms256m -Xmx"$heap" "${jvm_flags[@]}" \
      -Dlog4j.configuration="file:$run/conf/$p/log4j.properties" \
      -Dhbase.log.dir="$run/logs" -Djava.io.tmpdir="$run/data/tmp-$p" \
      -cp "$cp" "$@" > "$run/logs/$p.stdout.log" 2>&1 < /dev/null
  ) &
  echo $! > "$run/$p.pid"
}

launch_rs() {
  mkdir -p "$run/data/tmp-rs$1"
  launch "rs$1" 1g org.apache.hadoop.hbase.regionserver.HRegionServer start
}

# registered reports whether the master has registered region server N
# since the server's current process started.
registered() {
  local port pid
  port=$(rs_port "$1")
  pid=$(proc_pid "rs$1") || return 1
  [[ $(grep -c "Registering regionserver=127.0.0.1,$port," "$run/logs/master.log" 2>/dev/null) -ge ${2:-1} ]] &&
    ! port_free "$port" && kill -0 "$pid"
}

rs_port() {
  local zk master rs1 rs2
  read -r zk master rs1 rs2 < "$run/ports"
  if [[ $1 == 1 ]]; then echo "$rs1"; elif [[ $1 == 2 ]]; then echo "$rs2"; else
    log "no region server $1 (1 or 2)"; return 1; fi
}

rs_addr() { echo "127.0.0.1:$(rs_port "$1")"; }

# wait_until runs a command every 2 s until it succeeds, failing after the
# start timeout with the last lines of the cluster's logs.
wait_until() {
  local what=$1 deadline=$((SECONDS + start_timeout))
  shift
  until "$@"; do
    if ((SECONDS > deadline)); then
      log "$what not ready after ${start_timeout}s; last log lines:"
      tail -n 30 "$run"/logs/*.log >&2 || true
      return 1
    fi
    sleep 2
  done
}

probe_cluster() {
  local zk dir=$cache/hbase-$version
  read -r zk _ < "$run/ports"
  registered 1 && registered 2 &&
    java -cp "$dir/probe:$run/conf/master:$(cat "$dir/classpath.txt")" \
      -Dlog4j.configuration="file:$run/conf/master/log4j.properties" \
      Probe "127.0.0.1:$zk" >> "$run/logs/probe.log" 2>&1
}

cluster_start() {
  if proc_pid master >/dev/null || proc_pid zk >/dev/null; then
    log "an earlier cluster in $run is still running; stopping it first"
    cluster_stop
  fi
  classpath
  rm -rf "$run/data" "$run/logs" "$run/conf" "$run/ports" "$run/hbase.env"
  mkdir -p "$run/logs"
  local zk master rs1 rs2
  ports_picked=""
  pick_port zk; pick_port master; pick_port rs1; pick_port rs2
  echo "$zk $master $rs1 $rs2" > "$run/ports"
  cluster_config "$zk" "$master" "$rs1" "$rs2"
  log "starting a cluster: zookeeper 127.0.0.1:$zk, master :$master, region servers :$rs1 :$rs2; logs in $run/logs"
  launch_zk
  wait_until zookeeper eval '! port_free '"$zk" || { cluster_stop; return 1; }
  launch_master
  launch_rs 1
  launch_rs 2
  wait_until "the cluster" probe_cluster || { cluster_stop; return 1; }
  printf 'PROMHBASE_TEST_ZK=127.0.0.1:%s\nPROMHBASE_TEST_CLUSTER_DIR=%s\n' "$zk" "$run" > "$run/hbase.env"
  log "cluster is up after ${SECONDS}s (PROMHBASE_TEST_ZK=127.0.0.1:$zk)"
}

# rs_start starts region server N again on its port, after it was killed or
# exited; it waits until the master has registered it.
rs_start() {
  local n=$1 before
  if proc_pid "rs$n" >/dev/null; then
    log "region server $n is running"
    return 1
  fi
  before=$(grep -c "Registering regionserver=127.0.0.1,$(rs_port "$n")," "$run/logs/master.log" || true)
  launch_rs "$n"
  wait_until "region server $n" registered "$n" $((before + 1))
  log "region server $n is up at $(rs_addr "$n")"
}

# proc_kill SIGKILLs a cluster process by name (zk, master).
proc_kill() {
  local pid
  pid=$(proc_pid "$1") || { log "$1 is not running"; return 1; }
  kill -KILL "$pid"
  log "sent SIGKILL to $1 (pid $pid)"
}

launch_zk() {
  launch zk 256m org.apache.zookeeper.server.ZooKeeperServerMain "$run/conf/zk/zoo.cfg"
}

launch_master() {
  launch master 512m org.apache.hadoop.hbase.master.HMaster start
}

# zk_start starts ZooKeeper again after zk-kill, on the same port and data
# directory: the sessions of the other processes are in its data, and
# survive when they reconnect within their timeout.
zk_start() {
  local zk
  if proc_pid zk >/dev/null; then
    log "zookeeper is running"
    return 1
  fi
  read -r zk _ < "$run/ports"
  launch_zk
  wait_until zookeeper eval '! port_free '"$zk"
  log "zookeeper is up at 127.0.0.1:$zk"
}

# initialized reports whether the master log holds at least N lines of an
# active master's finished initialization.
initialized() {
  [[ $(grep -c "Master has completed initialization" "$run/logs/master.log" 2>/dev/null) -ge $1 ]]
}

# master_start starts the master again after master-kill; it waits until
# the new process has finished its initialization as the active master.
master_start() {
  local before
  if proc_pid master >/dev/null; then
    log "the master is running"
    return 1
  fi
  before=$(grep -c "Master has completed initialization" "$run/logs/master.log" || true)
  launch_master
  wait_until "the master" initialized $((before + 1))
  log "the master is active again"
}

rs_signal() {
  local pid
  pid=$(proc_pid "rs$1") || { log "region server $1 is not running"; return 1; }
  kill -"$2" "$pid"
  log "sent SIG$2 to region server $1 (pid $pid, $(rs_addr "$1"))"
}

# stop_proc ends one process: SIGCONT first (a frozen process handles no
# SIGTERM), then SIGTERM, then SIGKILL after 30 s.
stop_proc() {
  local pid
  pid=$(proc_pid "$1") || { rm -f "$run/$1.pid"; return 0; }
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$1 still running after 30s; killing"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$run/$1.pid"
}

cluster_stop() {
  # Region servers first (both at once), then the master, then ZooKeeper,
  # which every other process needs to stop cleanly.
  log "stopping the cluster in $run"
  stop_proc rs1 &
  stop_proc rs2 &
  wait
  stop_proc master
  stop_proc zk
  rm -f "$run/hbase.env"
}

cluster_status() {
  local p pid state
  for p in "${cluster_procs[@]}"; do
    if pid=$(proc_pid "$p"); then
      state=$(awk '{print $3}' "/proc/$pid/stat")
      [[ $state == T ]] && state="frozen (SIGSTOP)" || state=running
      echo "$p: $state, pid $pid"
    else
      echo "$p: not running"
    fi
  done
  [[ -f $run/hbase.env ]] && cat "$run/hbase.env"
  proc_pid master >/dev/null
}

cluster_env() { proc_pid master >/dev/null && cat "$run/hbase.env"; }

case "${1:-}" in
  cluster-start) cluster_start ;;
  cluster-stop) cluster_stop ;;
  cluster-status) cluster_status ;;
  cluster-env) cluster_env ;;
  rs-addr) rs_addr "${2:?region server number}" ;;
  rs-pid) proc_pid "rs${2:?region server number}" ;;
  rs-stop) rs_signal "${2:?region server number}" STOP ;;
  rs-cont) rs_signal "${2:?region server number}" CONT ;;
  rs-kill) rs_signal "${2:?region server number}" KILL ;;
  rs-term) rs_signal "${2:?region server number}" TERM ;;
  rs-start) rs_start "${2:?region server number}" ;;
  zk-kill) proc_kill zk ;;
  zk-start) zk_start ;;
  master-kill) proc_kill master ;;
  master-start) master_start ;;
  start) do_start fresh ;;
  resume) do_start resume ;;
  stop) do_stop ;;
  status) do_status ;;
  env) running_pid >/dev/null && cat "$run/hbase.env" ;;
  classpath) classpath && cat "$cache/hbase-$version/classpath.txt" ;;
  snapshots) shift && snapshots "$@" ;;
  *) echo "usage: $0 start|stop|resume|status|env|classpath|cluster-start|cluster-stop|cluster-status|cluster-env|rs-addr|rs-pid|rs-stop|rs-cont|rs-kill|rs-term|rs-start N|zk-kill|zk-start|master-kill|master-start" >&2; exit 2 ;;
esac
