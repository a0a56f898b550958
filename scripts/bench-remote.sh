#!/usr/bin/env bash
# Remote-write and remote-read throughput of the adapter next to Prometheus's
# own receiver and read endpoint, same load, same run, reported as ratios.
#
#   scripts/bench-remote.sh [pebble|hbase ...]     (default: pebble hbase)
#
# "hbase" uses PROMHBASE_TEST_ZK when set, otherwise starts its own HBase
# (scripts/hbase.sh with HBASE_RUN_DIR=$tmp/hbase) and stops it at the end.
# Knobs: REPS (3), SERIES (10000), ROUNDS (20), CONCURRENCY (4).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
backends=("$@"); [[ ${#backends[@]} -gt 0 ]] || backends=(pebble hbase)
reps=${REPS:-3} series=${SERIES:-10000} rounds=${ROUNDS:-20} conc=${CONCURRENCY:-4}
tmp=$(mktemp -d)
pids=()
own_hbase=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n $own_hbase ]] && HBASE_RUN_DIR=$tmp/hbase scripts/hbase.sh stop || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/adapter" ./cmd/adapter
go build -o "$tmp/loadgen" ./cmd/loadgen
prom=$(scripts/prometheus.sh)

free_port() { local p; while :; do p=$((20000 + RANDOM % 30000)); (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }; done; }
wait_ready() {
  for _ in $(seq 1 240); do curl -sf "$1" >/dev/null && return 0; sleep 0.5; done
  echo "not ready: $1" >&2; return 1
}

declare -A url
pp=$(free_port)
"$prom" --config.file=/dev/null --storage.tsdb.path="$tmp/prom" --web.listen-address="127.0.0.1:$pp" \
  --web.enable-remote-write-receiver --log.level=warn > "$tmp/prom.log" 2>&1 &
pids+=($!)
url[prometheus]="http://127.0.0.1:$pp"
for b in "${backends[@]}"; do
  ap=$(free_port)
  # The warm-up below assigns the UIDs of every new label value in a few
  # requests; give it time rather than 503s (measured separately).
  args=(--web.listen-address="127.0.0.1:$ap" --log.level=warn --write.timeout=10m)
  if [[ $b == hbase ]]; then
    if [[ -z ${PROMHBASE_TEST_ZK:-} ]]; then
      own_hbase=1
      HBASE_RUN_DIR=$tmp/hbase scripts/hbase.sh start
      export $(HBASE_RUN_DIR=$tmp/hbase scripts/hbase.sh env)
    fi
    args+=(--hbase.zookeeper-quorum="$PROMHBASE_TEST_ZK" --hbase.table-prefix="bench$RANDOM-")
  else
    args+=(--storage.path="$tmp/pebble")
  fi
  "$tmp/adapter" "${args[@]}" > "$tmp/adapter-$b.log" 2>&1 &
  pids+=($!)
  url[$b]="http://127.0.0.1:$ap"
done
for t in prometheus "${backends[@]}"; do wait_ready "${url[$t]}/-/ready"; done

echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# series=$series rounds=$rounds samples/request=2000 concurrency=$conc reps=$reps"
step=15000
base=$(( ($(date +%s) - 3*3600) * 1000 ))
declare -A res
# Warm-up, untimed for the ratios: every target creates its 10,000 series once
# (Prometheus: head series; the adapter: UIDs). The load below measures the
# steady state that follows. The adapter's line shows the cost of a cold start.
for t in prometheus "${backends[@]}"; do
  echo "warm-up $t $("$tmp/loadgen" -mode write1 -url "${url[$t]}/api/v1/write" -series "$series" -rounds 1 \
    -concurrency "$conc" -start $((base - step)) -step "$step" -timeout 10m)"
done
for rep in $(seq 1 "$reps"); do
  for mode in write1 write2; do
    # Every load writes its own time range: Prometheus refuses a sample that
    # rewrites an existing timestamp with another value.
    slot=$(( (rep-1)*2 )); [[ $mode == write2 ]] && slot=$((slot + 1))
    start=$(( base + slot * rounds * step ))
    for t in prometheus "${backends[@]}"; do
      line=$("$tmp/loadgen" -mode "$mode" -url "${url[$t]}/api/v1/write" -series "$series" -rounds "$rounds" \
        -concurrency "$conc" -start "$start" -step "$step")
      echo "$t $line"
      res[$t,$mode,$rep]=$(sed -E 's/.*samples_per_sec=([0-9]+).*/\1/' <<< "$line")
    done
  done
done
for rep in $(seq 1 "$reps"); do
  for mode in read-samples read-streamed; do
    for t in prometheus "${backends[@]}"; do
      line=$("$tmp/loadgen" -mode "$mode" -url "${url[$t]}/api/v1/read" -series "$series" -rounds 1 \
        -concurrency "$conc" -start "$base" -step $((rounds * step * 2 * reps)) )
      echo "$t $line"
      res[$t,$mode,$rep]=$(sed -E 's/.*samples_per_sec=([0-9]+).*/\1/' <<< "$line")
    done
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "| load | target | samples/s (median of $reps) | ratio to Prometheus |"
echo "|---|---|---|---|"
for mode in write1 write2 read-samples read-streamed; do
  ref=$(median $(for r in $(seq 1 "$reps"); do echo "${res[prometheus,$mode,$r]}"; done))
  echo "| $mode | prometheus | $ref | 1.00 |"
  for b in "${backends[@]}"; do
    v=$(median $(for r in $(seq 1 "$reps"); do echo "${res[$b,$mode,$r]}"; done))
    echo "| $mode | adapter ($b) | $v | $(awk -v a="$v" -v b="$ref" 'BEGIN{printf "%.2f", a/b}') |"
  done
done
