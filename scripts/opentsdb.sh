#!/usr/bin/env bash
# OpenTSDB 2.4.1 on an existing HBase, for the comparison in `make bench`.
#
#   scripts/opentsdb.sh start   create its tables (if missing) with the
#                               families of its create_table.sh, write a
#                               config, start TSDMain on a free loopback port,
#                               wait until /api/version answers
#   scripts/opentsdb.sh stop    SIGTERM (it flushes its compaction queue
#                               first) and wait until it exits
#   scripts/opentsdb.sh env     print OPENTSDB_URL=... and OPENTSDB_PID=...
#   scripts/opentsdb.sh classpath
#
# Settings (environment):
#   PROMHBASE_TEST_ZK      ZooKeeper quorum of the HBase (required for start)
#   OPENTSDB_RUN_DIR       config, logs, pid (default .opentsdb/ in the repo)
#   OPENTSDB_TABLE_PREFIX  prefix of its table names (default "otsdb-"):
#                          <prefix>tsdb, <prefix>tsdb-uid, <prefix>tsdb-tree,
#                          <prefix>tsdb-meta; several runs on one HBase must
#                          use different prefixes
#   OPENTSDB_HEAP          JVM heap (default 1g)
#   OPENTSDB_CONF_EXTRA    configuration lines appended to the config
#                          written (say "tsd.storage.enable_appends = true";
#                          later lines win)
#   BENCHTOOL              a built cmd/benchtool (default: go run)
# Jars are resolved from Maven Central once into $PROMHBASE_CACHE (default
# ~/.cache/prom-hbase), as scripts/hbase.sh does for HBase.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=${OPENTSDB_RUN_DIR:-$repo/.opentsdb}
cache=${PROMHBASE_CACHE:-$HOME/.cache/prom-hbase}
prefix=${OPENTSDB_TABLE_PREFIX:-otsdb-}
version=2.4.1
dir=$cache/opentsdb-$version

log() { echo "opentsdb.sh: $*" >&2; }

# The runtime: OpenTSDB and its dependencies, and JAXB's API, which Java 11
# and later no longer ship and OpenTSDB 2.4.1 needs wherever it prints or
# parses a UID in hex (TSUIDs: /api/annotation, show_tsuids).
pom() {
  cat <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.promhbase</groupId>
  <artifactId>opentsdb-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>net.opentsdb</groupId>
      <artifactId>opentsdb</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>javax.xml.bind</groupId>
      <artifactId>jaxb-api</artifactId>
      <version>2.3.1</version>
    </dependency>
  </dependencies>
</project>
POM
}

# classpath resolves the runtime once per pom (a changed pom resolves again),
# one process at a time.
classpath() {
  mkdir -p "$dir"
  exec 9> "$dir/.lock"
  flock 9
  if [[ -s $dir/classpath.txt ]] && [[ "$(pom)" == "$(cat "$dir/pom.xml" 2>/dev/null)" ]]; then
    exec 9>&-
    return 0
  fi
  pom > "$dir/pom.xml"
  log "resolving OpenTSDB $version from Maven Central into $dir (once)"
  mvn -q -B -f "$dir/pom.xml" dependency:build-classpath \
    -Dmdep.outputFile="$dir/classpath.tmp" -Dmdep.includeScope=runtime >&2
  mv "$dir/classpath.tmp" "$dir/classpath.txt"
  exec 9>&-
}

running_pid() {
  [[ -f $run/tsd.pid ]] || return 1
  local pid
  pid=$(cat "$run/tsd.pid")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q TSDMain; then
    echo "$pid"
    return 0
  fi
  return 1
}

# shellcheck source=scripts/ports.sh
source "$repo/scripts/ports.sh"
# shellcheck source=scripts/stop.sh
source "$repo/scripts/stop.sh"

write_config() {
  local port=$1
  mkdir -p "$run/cache" "$run/static" "$run/logs"
  # The keys its users set; everything else keeps OpenTSDB's defaults
  # (row compaction on, 1 s asynchbase flush interval, 3-byte UIDs).
  cat > "$run/opentsdb.conf" <<CONF
tsd.network.port = $port
tsd.network.bind = 127.0.0.1
tsd.http.staticroot = $run/static
tsd.http.cachedir = $run/cache
tsd.storage.hbase.zk_quorum = $PROMHBASE_TEST_ZK
tsd.storage.hbase.data_table = ${prefix}tsdb
tsd.storage.hbase.uid_table = ${prefix}tsdb-uid
tsd.storage.hbase.tree_table = ${prefix}tsdb-tree
tsd.storage.hbase.meta_table = ${prefix}tsdb-meta
tsd.core.auto_create_metrics = true
tsd.storage.enable_compaction = true
tsd.http.request.enable_chunked = true
tsd.http.request.max_chunk = 67108864
${OPENTSDB_CONF_EXTRA:-}
CONF
  # Without a configuration logback logs every RPC at DEBUG to stdout.
  cat > "$run/logback.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$run/logs/tsd.log</file>
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
}

do_start() {
  [[ -n ${PROMHBASE_TEST_ZK:-} ]] || { log "PROMHBASE_TEST_ZK is not set"; return 1; }
  if pid=$(running_pid); then
    log "an earlier TSD (pid $pid) is still running; stopping it first"
    do_stop
  fi
  classpath
  log "creating tables ${prefix}tsdb{,-uid,-tree,-meta} if missing"
  if [[ -n ${BENCHTOOL:-} ]]; then
    "$BENCHTOOL" otsdb-tables -zk "$PROMHBASE_TEST_ZK" -prefix "$prefix"
  else
    (cd "$repo" && go run ./cmd/benchtool otsdb-tables -zk "$PROMHBASE_TEST_ZK" -prefix "$prefix")
  fi
  # A free port may be taken before the TSD binds it (another test's
  # listener, or a connection's ephemeral port): then try another.
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    launch || rc=$?
    ((rc == 2)) || return "$rc"
    log "port taken before the TSD bound it (attempt $attempt); another one"
  done
  return 1
}

# launch starts TSDMain on a free port and waits until it answers: 0 when it
# does, 2 when it could not bind its port, 1 otherwise.
launch() {
  local port pid
  pick_port port
  write_config "$port"
  (
    cd "$run"
    exec setsid java -Xms256m -Xmx"${OPENTSDB_HEAP:-1g}" -XX:+UseG1GC \
      -Dlogback.configurationFile="$run/logback.xml" \
      -cp "$(cat "$dir/classpath.txt")" net.opentsdb.tools.TSDMain --config="$run/opentsdb.conf" \
      > "$run/logs/stdout.log" 2>&1 < /dev/null
  ) &
  pid=$!
  echo "$pid" > "$run/tsd.pid"
  local deadline=$((SECONDS + 120))
  until curl -sf "http://127.0.0.1:$port/api/version" > /dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
      do_stop
      if grep -q "BindException" "$run/logs/stdout.log"; then
        return 2
      fi
      log "TSD did not come up; last log lines:"
      tail -n 40 "$run/logs/tsd.log" "$run/logs/stdout.log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  printf 'OPENTSDB_URL=http://127.0.0.1:%s\nOPENTSDB_PID=%s\n' "$port" "$pid" > "$run/opentsdb.env"
  log "TSD is up on 127.0.0.1:$port (pid $pid, tables ${prefix}tsdb*)"
}

do_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$run/tsd.pid" "$run/opentsdb.env"
    log "not running"
    return 0
  fi
  log "stopping pid $pid (it flushes its compaction queue first)"
  stop_pid "$pid" 120
  rm -f "$run/tsd.pid" "$run/opentsdb.env"
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  env) running_pid > /dev/null && cat "$run/opentsdb.env" ;;
  classpath) classpath && cat "$dir/classpath.txt" ;;
  *) echo "usage: $0 start|stop|env|classpath" >&2; exit 2 ;;
esac
