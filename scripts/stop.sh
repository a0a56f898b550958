# shellcheck shell=bash
# stop.sh: stopping the processes the scripts start (HBase, OpenTSDB).
# Sourced, not run; the sourcing script defines log.

# stop_pid PID SECONDS: SIGTERM to PID, which may take up to SECONDS to
# finish what it must (HBase its flushes, OpenTSDB its compaction queue);
# SIGKILL if it is still there then.
stop_pid() {
  local pid=$1 secs=$2
  kill -TERM "$pid" 2> /dev/null || true
  for _ in $(seq 1 $((secs * 5))); do
    kill -0 "$pid" 2> /dev/null || return 0
    sleep 0.2
  done
  log "still running after ${secs}s; killing"
  kill -KILL "$pid" 2> /dev/null || true
  sleep 1
}
