#!/usr/bin/env bash
# `make bench`: the adapter next to OpenTSDB 2.4.1 on the same HBase and next
# to Prometheus's own receiver and remote read, same data, same run. Prints
# every figure as it is taken, then the Markdown tables of BENCHMARKS.md with
# the ratios. About 25 minutes on 2 cores, plus HBase's start and the builds.
#
#   scripts/bench.sh
#
# HBase: when HBASE_RUN_DIR names a running scripts/hbase.sh HBase, that one
# is used (its pid gives the CPU time, its root directory the HFile bytes);
# otherwise a fresh one is started in a temporary directory with a heap of
# HBASE_HEAP (2g unless set: at scripts/hbase.sh's 1g, a whole run's tables
# and OpenTSDB's ingest at 200 a request kept HBase's memstore above its
# high-water mark and once ended in OutOfMemoryError) and stopped at the end.
# Every run uses tables of its own (prefix bench<random>-), dropped at the end
# from an HBase it did not start.
#
# Steps (cmd/benchtool takes each figure):
#   cold    a fresh adapter and a fresh TSD: one request of COLD_SERIES new
#           series, then SUSTAIN of requests whose series each bring a new
#           label value; seconds, new strings/s, HBase CPU per new string
#   load    DS_SERIES x DS_ROUNDS samples (counters and gauges, one every
#           15 s) into the adapter, a TSD and Prometheus; the same samples
#           into a Prometheus TSDB block, and as bare XOR chunks per value
#           kind, raw and deflated (benchtool chunkbytes)
#   read-fresh  the TSD stopped (it flushes its row compaction), started
#           again and read from (it also compacts the rows it reads); after
#           the compactor (see below), the adapter read from: each store's
#           compaction done, the cells it replaced still in HBase behind
#           delete markers until HBase's major compaction
#   bytes   TSD stopped, its data table flushed alone (HFile bytes as it
#           stands between HBase's weekly major compactions), then data and
#           UID tables flushed and major-compacted, HFile bytes
#   read    everything read back from each: untimed passes for READ_WARMUP
#           (the JVMs of HBase and OpenTSDB compile their read paths after
#           tens of thousands of calls; one pass over this data set is a
#           few hundred), then more in windows of 3 s until five in a row
#           agree within 10 % (benchtool read -steady; at most 3 min), then
#           READ_REPS timed passes (READ_STREAMED_REPS for a streamed read,
#           whose pass is ~10x shorter); the first pass is reported too,
#           cold. The adapter and Prometheus then read READ_ROUNDS - 1 times
#           more each, warm, taking turns to go first; the median of the
#           rounds is reported, with the range of the paired ratios. An
#           adapter on the embedded store, the data set loaded into it and
#           compacted by its compactor, reads in the same rounds
#   ingest  after an untimed third, INGEST_ROUNDS more rounds of the same
#           series (from now on) at 2,000 samples per request, then
#           INGEST_ROUNDS_200 at 200, 4 in flight, until durable (2 million
#           samples a run each, 10-30 s: each run spans one or more of HBase's
#           memstore flushes, where one of 0.45 million, 3-5 s, was decided
#           by whether one fell into it); then 200 per request again
#           with 16 in flight (Prometheus's queue manager runs up to 50
#           shards, each a request in flight), and 2,000 per request over
#           ten times the series (one sample per series in a request, as
#           Prometheus sends in its steady state); CPU of adapter + HBase and
#           of TSD + HBase; INGEST_REPS times each, the two systems taking
#           turns to go first, the median reported
#   receiver  remote write 1.0 and 2.0 in Prometheus's steady-state shape
#           (RECEIVER_SERIES series, one sample of each a request of 2,000,
#           4 in flight, RECEIVER_ROUNDS rounds a run, RECEIVER_REPS runs)
#           into a fresh Prometheus's own receiver, a fresh adapter on HBase
#           and a fresh adapter on the embedded store, in turns; samples/s
#           and CPU per sample as ratios to Prometheus's
#   histograms  HIST_SERIES x HIST_ROUNDS native histograms (schema 3, 20-40
#           buckets, one every 15 s) into an adapter on tables of their own
#           and into a Prometheus TSDB block; HFile bytes raw and after the
#           compactor; read back and compared histogram by histogram
#
# Compactor (issue 11): when the adapter has --compactor.enabled, the data set
# is loaded with the compactor off ("adapter, raw cells"); after "bytes" the
# adapter is restarted with COMPACTOR_FLAGS (default: compact closed hours at
# once, no rate limit), the script waits until the counter
# COMPACTOR_DONE_METRIC (promhbase_compactor_series_hours_total) on its
# /metrics reaches the data set's series-hours, measures the data table again,
# flushed alone (the compactor's sweep of the raw family done) and then after
# flush + major compaction ("adapter, compacted"), and keeps the compactor
# running for read and ingest. When the adapter has --storage.float-chunks,
# the data set goes once more into tables of their own, through an adapter
# with --storage.float-chunks=xor, compacted the same way ("adapter,
# compacted, XOR chunks only"); that adapter reads in the streamed rounds
# too (the adapter's default stores dense cells, which a streamed read
# re-encodes; XOR chunks go out untouched).
#
# Knobs: COLD_SERIES (10000), SUSTAIN (20s), SUSTAIN_BATCH (2000), DS_SERIES
# (1000), DS_ROUNDS (360), INGEST_ROUNDS (2000; 900 before 2026-11-27 13:30),
# INGEST_ROUNDS_200 (INGEST_ROUNDS; half of it before), INGEST_SHAPES (the four
# shapes of the ingest step, PERxIN_FLIGHTxSET), INGEST_REPS (3), READ_REPS (10), READ_STREAMED_REPS (100), READ_ROUNDS (3), READ_WARMUP
# (20s), HIST_SERIES
# (200; 0 leaves histograms out), HIST_ROUNDS (480), BENCH_ONLY=histograms
# (that step and its table only), BENCH_ONLY=import (only the import of
# IMPORT_SERIES (10000) series x IMPORT_HOURS (8) hours of TSDB blocks with
# `adapter import`: samples/s, CPU, bytes/sample after major compaction;
# not part of the full run), BENCH_ONLY=import-opentsdb (only the import of
# OTSDB_IMPORT_SERIES (1000) series x OTSDB_IMPORT_ROUNDS (360) samples that
# a TSD loaded and, stopping, compacted, with `adapter import opentsdb`:
# samples/s, CPU, bytes/sample of both data tables after major compaction;
# not part of the full run), BENCH_ONLY=ingest (only the ingest step, on
# fresh tables, and its table), BENCH_ONLY=receiver (only the receiver step;
# RECEIVER_SERIES (10000), RECEIVER_ROUNDS (200), RECEIVER_REPS
# (INGEST_REPS)), ADAPTER_BIN (a
# built adapter instead of building ./cmd/adapter), PROMETHEUS_BIN (a built
# Prometheus instead of scripts/prometheus.sh; "none" leaves Prometheus out),
# BENCH_KEEP=1 keeps the temporary directory (logs, results.txt).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

cold_series=${COLD_SERIES:-10000} sustain=${SUSTAIN:-20s} sustain_batch=${SUSTAIN_BATCH:-2000}
ds_series=${DS_SERIES:-1000} ds_rounds=${DS_ROUNDS:-360} ingest_rounds=${INGEST_ROUNDS:-2000} ingest_reps=${INGEST_REPS:-3}
ingest_rounds_200=${INGEST_ROUNDS_200:-$ingest_rounds} ingest_shapes=${INGEST_SHAPES:-2000x4xds 200x4xds 200x16xds 2000x4xwide}
read_reps=${READ_REPS:-10} read_streamed_reps=${READ_STREAMED_REPS:-100} read_rounds=${READ_ROUNDS:-3} read_warmup=${READ_WARMUP:-20s}
hist_series=${HIST_SERIES:-200} hist_rounds=${HIST_ROUNDS:-480}
import_series=${IMPORT_SERIES:-10000} import_hours=${IMPORT_HOURS:-8}
otsdb_import_series=${OTSDB_IMPORT_SERIES:-1000} otsdb_import_rounds=${OTSDB_IMPORT_ROUNDS:-360}
compactor_done_metric=${COMPACTOR_DONE_METRIC:-promhbase_compactor_series_hours_total}
step_ms=15000

tmp=$(mktemp -d /tmp/prom-hbase-bench.XXXXXX)
results=$tmp/results.txt
pids=()
tsds=()
own_hbase=""
prefix=""
cleanup() {
  local d p
  for d in "${tsds[@]}"; do OPENTSDB_RUN_DIR=$tmp/otsdb-$d scripts/opentsdb.sh stop 2> /dev/null || true; done
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  if [[ -n $own_hbase ]]; then
    HBASE_RUN_DIR=$own_hbase scripts/hbase.sh stop || true
  elif [[ -n ${prefix:-} && -z ${BENCH_KEEP:-} ]]; then
    "$tmp/benchtool" drop -root "$hbase_root" -prefix "$prefix" > /dev/null || true
  fi
  if [[ -n ${BENCH_KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 143' INT TERM
say() { echo "bench.sh [$(date -u +%T)] $*" >&2; }

if [[ -n ${ADAPTER_BIN:-} ]]; then cp "$ADAPTER_BIN" "$tmp/adapter"; else go build -o "$tmp/adapter" ./cmd/adapter; fi
go build -o "$tmp/benchtool" ./cmd/benchtool
bt=$tmp/benchtool
has_compactor=""
adapter_help=$("$tmp/adapter" --help-long 2>&1 || true)
if [[ $adapter_help == *compactor.enabled* ]]; then has_compactor=1; fi
prom=${PROMETHEUS_BIN:-$(scripts/prometheus.sh)}

hb=${HBASE_RUN_DIR:-}
if [[ -z $hb ]] || ! HBASE_RUN_DIR=$hb scripts/hbase.sh status > /dev/null 2>&1; then
  hb=$tmp/hbase
  own_hbase=$hb
  HBASE_RUN_DIR=$hb HBASE_HEAP=${HBASE_HEAP:-2g} scripts/hbase.sh start
fi
export $(HBASE_RUN_DIR=$hb scripts/hbase.sh env)
hbase_pid=$(cat "$hb/hbase.pid")
hbase_root=$(sed -n 's|.*<name>hbase.rootdir</name><value>file://\([^<]*\)</value>.*|\1|p' "$hb/conf/hbase-site.xml")
[[ -d $hbase_root ]] || { echo "no HBase root directory found in $hb/conf/hbase-site.xml" >&2; exit 1; }
prefix=bench$RANDOM-

# shellcheck source=scripts/ports.sh
source "$repo/scripts/ports.sh"
# wait_ready URL [PID [LOG]]: until URL answers; fails at once when PID exits.
wait_ready() {
  for _ in $(seq 1 240); do
    curl -sf --max-time 5 "$1" > /dev/null && return 0
    if [[ -n ${2:-} ]] && ! kill -0 "$2" 2> /dev/null; then
      echo "exited before it was ready: $1; last lines of ${3:-its log}:" >&2
      [[ -n ${3:-} ]] && tail -n 5 "$3" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "not ready: $1" >&2
  return 1
}

# rec STEP CMD...: run a measurement; its lines go to the results, tagged.
rec() {
  local step=$1
  shift
  "$@" | sed -u "s/^/step=$step /" | tee -a "$results"
}

# launch_adapter NAME FLAGS...: an adapter on a free port, logging to
# adapter-NAME.log; sets adapter_url, adapter_pid once it is ready.
launch_adapter() {
  local name=$1 port
  shift
  pick_port port
  "$tmp/adapter" --web.listen-address="127.0.0.1:$port" --log.level=warn "$@" \
    >> "$tmp/adapter-$name.log" 2>&1 &
  adapter_pid=$!
  pids+=("$adapter_pid")
  adapter_url=http://127.0.0.1:$port
  wait_ready "$adapter_url/-/ready" "$adapter_pid" "$tmp/adapter-$name.log"
}

# start_adapter NAME TABLE_PREFIX [FLAGS...]: an adapter on the HBase.
start_adapter() {
  launch_adapter "$1" --hbase.zookeeper-quorum="$PROMHBASE_TEST_ZK" --hbase.table-prefix="$2" "${@:3}"
}

# start_embedded NAME DIR [FLAGS...]: an adapter on the embedded store in DIR.
start_embedded() { launch_adapter "$1" --storage.path="$2" "${@:3}"; }

stop_pid() {
  kill -TERM "$1" 2> /dev/null || true
  for _ in $(seq 1 200); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.2; done
  kill -KILL "$1" 2> /dev/null || true
}

# start_tsd NAME TABLE_PREFIX: sets tsd_url, tsd_pid.
start_tsd() {
  local name=$1 tp=$2
  OPENTSDB_RUN_DIR=$tmp/otsdb-$name OPENTSDB_TABLE_PREFIX=$tp BENCHTOOL=$bt scripts/opentsdb.sh start
  tsds+=("$name")
  eval "$(OPENTSDB_RUN_DIR=$tmp/otsdb-$name scripts/opentsdb.sh env)"
  tsd_url=$OPENTSDB_URL tsd_pid=$OPENTSDB_PID
}

stop_tsd() { OPENTSDB_RUN_DIR=$tmp/otsdb-$1 scripts/opentsdb.sh stop; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/^Mem:/{print $2}') GiB"
say "$machine; HBase pid $hbase_pid, root $hbase_root, tables $prefix*"

now=$(date +%s)
start=$(((now / 3600 - 5) * 3600 * 1000)) # whole hours, old enough for every row to be closed
raw=()
[[ -n $has_compactor ]] && raw=(--no-compactor.enabled)
read -r -a compactor_flags <<< "${COMPACTOR_FLAGS:---compactor.enabled --compactor.grace=0s --compactor.interval=5s --compactor.rate=0 --write.timeout=10s --compactor.max-clock-skew=1s}"

# wait_series_hours N: until the adapter's compactor has done N series-hours.
wait_series_hours() {
  local deadline=$((SECONDS + 600))
  until (($(curl -sf "$adapter_url/metrics" | awk -v m="$compactor_done_metric" '$1 == m {n = int($2)} END {print n + 0}') >= $1)); do
    ((SECONDS < deadline)) || { echo "compactor did not reach $1 series-hours ($compactor_done_metric)" >&2; exit 1; }
    sleep 2
  done
}

# --- histograms: bytes per native-histogram sample --------------------------
# Tables of their own, so that the data table holds only histograms.
bench_histograms() {
  local hs=(-run hist -series "$hist_series" -rounds "$hist_rounds" -start "$start" -step "$step_ms")
  say "histograms: $hist_series series x $hist_rounds native histograms"
  start_adapter hist "${prefix}hist-" "${raw[@]}"
  rec hist-load "$bt" histload -target "adapter=$adapter_url" "${hs[@]}"
  rec histblock "$bt" histblock -dir "$tmp/hist-block" "${hs[@]}"
  rec hist-bytes "$bt" compact -root "$hbase_root" "${prefix}hist-prom-data"
  if [[ -n $has_compactor ]]; then
    stop_pid "$adapter_pid"
    start_adapter hist "${prefix}hist-" "${compactor_flags[@]}"
    wait_series_hours $((hist_series * ((hist_rounds * step_ms + 3600000 - 1) / 3600000)))
    rec hist-bytes-compacted "$bt" compact -root "$hbase_root" "${prefix}hist-prom-data"
  fi
  rec hist-read "$bt" histread -target "adapter=$adapter_url" "${hs[@]}"
  stop_pid "$adapter_pid"
}

# --- import: Prometheus TSDB blocks through `adapter import` -----------------
bench_import() {
  say "import: $import_series series x $import_hours h of blocks"
  rec import "$bt" import -adapter "$tmp/adapter" -dir "$tmp/import-blocks" -prefix "${prefix}imp-" \
    -run imp -series "$import_series" -hours "$import_hours" -step "$step_ms" -pid "hbase=$hbase_pid"
  rec import-bytes "$bt" compact -root "$hbase_root" "${prefix}imp-prom-data"
}

# --- import-opentsdb: OpenTSDB's tables through `adapter import opentsdb` ---
# A TSD loads the data set and stops (flushing its compaction queue, as a TSD
# taken down does); the import reads its tables, OpenTSDB not running.
bench_import_opentsdb() {
  local oi=(-run oi -series "$otsdb_import_series" -rounds "$otsdb_import_rounds" -start "$start" -step "$step_ms")
  say "import-opentsdb: $otsdb_import_series series x $otsdb_import_rounds samples through a TSD"
  start_tsd oi "${prefix}oi-"
  rec opentsdb-load "$bt" load -target "opentsdb=$tsd_url" "${oi[@]}"
  stop_tsd oi
  rec opentsdb-bytes "$bt" compact -root "$hbase_root" "${prefix}oi-tsdb"
  rec import-opentsdb "$bt" import -source opentsdb -otsdb-prefix "${prefix}oi-" -adapter "$tmp/adapter" \
    -prefix "${prefix}oi-" "${oi[@]}" -pid "hbase=$hbase_pid"
  rec import-opentsdb-bytes "$bt" compact -root "$hbase_root" "${prefix}oi-prom-data"
}

# --- ingest: more of the same series, until durable --------------------------
# bench_ingest: the shapes below into the adapter at adapter_url and the TSD
# at tsd_url, each on its own tables.
bench_ingest() {
  # From now on, 15 s apart: neither OpenTSDB (it compacts rows whose hour began
  # over an hour ago) nor the compactor (closed hours only) compacts these rows
  # while the clock runs, so both figures are ingest alone.
  ingest_start=$(($(date +%s) * 1000))
  # Untimed first: the TSD was restarted for the reads and its JVM compiles
  # the write path during its first samples. The wide set's series get their
  # UIDs here too, so that its timed runs measure samples, not new series.
  warm=$((ingest_rounds / 3))
  wide_series=$((ds_series * 10))
  for t in "adapter=$adapter_url" "opentsdb=$tsd_url"; do
    "$bt" load -target "$t" -run ds -series "$ds_series" -start "$ingest_start" -step "$step_ms" -rounds "$warm" > /dev/null
    "$bt" load -target "$t" -run wide -series "$wide_series" -start "$ingest_start" -step "$step_ms" -rounds $((warm / 10)) > /dev/null
  done
  declare -A skip=([ds]=$warm [wide]=$((warm / 10)))
  # INGEST_REPS runs of each system, taking turns to go first: HBase's state
  # moves while it ingests (its compiler, its memstores, their flushes), and a
  # system that always went second would always meet the state the other left
  # behind. The report takes the median of each. After its clock stops, each
  # run waits for HBase to settle (`ingest -settle`: no region of the
  # system's table compacting, HBase's process idle) and reports the CPU of
  # that wait: the flushes and compactions the run left behind are its cost,
  # counted beside the figure, where they would otherwise fall into the runs
  # that follow it.
  # A shape is samples per request x requests in flight x data set. The
  # loader's shards split the series between them as Prometheus's do, so with
  # DS_SERIES series a request of 2,000 carries 8 samples of each of its
  # series (4 shards of 250); the wide set, ten times the series, carries one
  # sample per series, which is what Prometheus sends in its steady state
  # (more series per shard than samples per request).
  for shape in $ingest_shapes; do
    IFS=x read -r per conc set <<< "$shape"
    n=$ds_series r=$ingest_rounds
    [[ $per == 200 ]] && r=$ingest_rounds_200
    [[ $set == wide ]] && n=$wide_series r=$((r / 10))
    for ((rep = 1; rep <= ingest_reps; rep++)); do
      say "ingest at $per samples per request, $conc in flight, $n series, $rep of $ingest_reps"
      order=(adapter opentsdb)
      ((rep % 2 == 0)) && order=(opentsdb adapter)
      for t in "${order[@]}"; do
        who=(-target "adapter=$adapter_url" -pid "adapter=$adapter_pid" -settle "${prefix}ds-prom-data")
        [[ $t == opentsdb ]] && who=(-target "opentsdb=$tsd_url" -pid "tsd=$tsd_pid" -settle "${prefix}ds-tsdb")
        rec "ingest rep=$rep" "$bt" ingest "${who[@]}" -pid "hbase=$hbase_pid" -run "$set" -series "$n" -start "$ingest_start" \
          -step "$step_ms" -rounds "$r" -skip-rounds "${skip[$set]}" -samples-per-request "$per" -concurrency "$conc"
        skip[$set]=$((skip[$set] + r))
      done
    done
  done
}
# --- receiver: the adapter next to Prometheus's own remote-write receiver ---
# bench_receiver: Prometheus's steady-state shape (RECEIVER_SERIES series, one
# sample of each a request of 2,000, 4 in flight) in remote write 1.0 and 2.0
# into a fresh Prometheus with its receiver, a fresh adapter on HBase (tables
# of their own, its default flags) and a fresh adapter on the embedded store;
# each answers once the samples are durable as it promises (Prometheus: in
# its head and its write-ahead log). RECEIVER_REPS runs of each, the targets
# taking turns to go first. The timestamps start now, 250 ms apart: the
# step's 2 x REPS x RECEIVER_ROUNDS rounds (1,250 by default) then stay
# within the 10 minutes ahead that Prometheus's receiver accepts, and no hour
# they touch is closed long enough for the compactor (--compactor.grace
# 10m), so the figures are ingest alone, as in the ingest step.
bench_receiver() {
  local rs=${RECEIVER_SERIES:-10000} rr=${RECEIVER_ROUNDS:-200} reps=${RECEIVER_REPS:-$ingest_reps}
  local rstep=250 rstart=$(($(date +%s) * 1000)) pp
  pick_port pp
  "$prom" --config.file=/dev/null --storage.tsdb.path="$tmp/prom-rc" --web.listen-address="127.0.0.1:$pp" \
    --web.enable-remote-write-receiver --log.level=warn > "$tmp/prom-rc.log" 2>&1 &
  pids+=($!)
  local -A url=([prometheus]=http://127.0.0.1:$pp) pid=([prometheus]=$!) kind=([prometheus]=prometheus)
  wait_ready "${url[prometheus]}/-/ready" "${pid[prometheus]}" "$tmp/prom-rc.log"
  start_adapter rc-hbase "${prefix}rc-"
  url[hbase]=$adapter_url pid[hbase]=$adapter_pid kind[hbase]=adapter
  start_embedded rc-embedded "$tmp/rc-embedded"
  url[embedded]=$adapter_url pid[embedded]=$adapter_pid kind[embedded]=adapter
  local targets=(prometheus hbase embedded) t skip=0 rep proto run=0
  # Untimed: every target creates the series (Prometheus its head series, the
  # adapters their UIDs) and warms up; the runs measure the steady state.
  for t in "${targets[@]}"; do
    "$bt" load -target "${kind[$t]}=${url[$t]}" -run rc -series "$rs" -start "$rstart" -step "$rstep" -rounds $((rr / 4)) > /dev/null
  done
  skip=$((rr / 4))
  # The stores grow from run to run (the embedded store's compactions cost
  # more as it does), so the two protocols take turns to go first as well.
  for ((rep = 1; rep <= reps; rep++)); do
    local protos=(1 2)
    ((rep % 2)) || protos=(2 1)
    for proto in "${protos[@]}"; do
      say "receiver: remote write $proto.0, $rs series, $rep of $reps"
      local flags=() order=("${targets[@]}") k=$((run % 3))
      [[ $proto == 2 ]] && flags=(-rw2)
      # Each target first once in every three runs.
      order=("${order[@]:k}" "${order[@]:0:k}")
      run=$((run + 1))
      for t in "${order[@]}"; do
        local cpu=(-pid "${t}=${pid[$t]}")
        [[ $t == hbase ]] && cpu=(-pid "adapter=${pid[$t]}" -pid "hbase=$hbase_pid")
        rec "receiver store=$t rw=$proto rep=$rep" "$bt" ingest -target "${kind[$t]}=${url[$t]}" "${flags[@]}" "${cpu[@]}" \
          -run rc -series "$rs" -start "$rstart" -step "$rstep" -rounds "$rr" -skip-rounds "$skip" -samples-per-request 2000 -concurrency 4
      done
      skip=$((skip + rr))
    done
  done
  for t in "${targets[@]}"; do stop_pid "${pid[$t]}"; done
}

began=$SECONDS
case ${BENCH_ONLY:-} in
  import | import-opentsdb | receiver)
    "bench_${BENCH_ONLY//-/_}"
    echo
    echo "Command: \`BENCH_ONLY=$BENCH_ONLY make bench\`. Machine: $machine. Run $(date -u '+%F %H:%M') UTC, $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s; load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo
    "$bt" report -only "$BENCH_ONLY" "$results"
    exit 0
    ;;
  ingest)
    # The ingest step alone, on fresh tables, the compactor running as in
    # the full run: what the full run measures after its reads, minutes
    # sooner (HBase holds only these tables' memstores).
    flags=()
    [[ -n $has_compactor ]] && flags=("${compactor_flags[@]}")
    start_adapter ds "${prefix}ds-" "${flags[@]}"
    start_tsd ds "${prefix}ds-"
    bench_ingest
    echo
    echo "Command: \`BENCH_ONLY=ingest make bench\` (INGEST_SHAPES=\"$ingest_shapes\", INGEST_ROUNDS=$ingest_rounds, INGEST_ROUNDS_200=$ingest_rounds_200, INGEST_REPS=$ingest_reps). Machine: $machine. Run $(date -u '+%F %H:%M') UTC, $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s; load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo
    "$bt" report -only ingest "$results"
    exit 0
    ;;
esac
if [[ ${BENCH_ONLY:-} == histograms ]]; then
  bench_histograms
  echo
  echo "Command: \`BENCH_ONLY=histograms make bench\`. Run $(date -u '+%F %H:%M') UTC, $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
  echo
  "$bt" report -only histograms "$results"
  exit 0
fi

# --- cold: UID assignment on fresh tables --------------------------------
say "cold start"
start_adapter cold "${prefix}cold-"
start_tsd cold "${prefix}cold-"
rec cold "$bt" cold -target "adapter=$adapter_url" -series "$cold_series" -sustain "$sustain" -batch "$sustain_batch" \
  -pid "hbase=$hbase_pid" -pid "adapter=$adapter_pid"
rec cold "$bt" cold -target "opentsdb=$tsd_url" -series "$cold_series" -sustain "$sustain" -batch "$sustain_batch" \
  -pid "hbase=$hbase_pid" -pid "tsd=$tsd_pid"
stop_pid "$adapter_pid"
stop_tsd cold

# --- load: the same data set into the adapter, a TSD, Prometheus, a block --
ds=(-run ds -series "$ds_series" -start "$start" -step "$step_ms")
say "loading $ds_series series x $ds_rounds samples"
start_adapter ds "${prefix}ds-" "${raw[@]}"
start_tsd ds "${prefix}ds-"
if [[ $prom != none ]]; then
  pick_port pp
  "$prom" --config.file=/dev/null --storage.tsdb.path="$tmp/prom" --web.listen-address="127.0.0.1:$pp" \
    --web.enable-remote-write-receiver --log.level=warn > "$tmp/prom.log" 2>&1 &
  pids+=($!)
  prom_pid=$!
  prom_url=http://127.0.0.1:$pp
  wait_ready "$prom_url/-/ready" "${pids[-1]}" "$tmp/prom.log"
fi
rec load "$bt" load -target "adapter=$adapter_url" "${ds[@]}" -rounds "$ds_rounds"
rec load "$bt" load -target "opentsdb=$tsd_url" "${ds[@]}" -rounds "$ds_rounds"
[[ $prom == none ]] || rec load "$bt" load -target "prometheus=$prom_url" "${ds[@]}" -rounds "$ds_rounds"
rec promblock "$bt" promblock -dir "$tmp/block" "${ds[@]}" -rounds "$ds_rounds"
rec chunkbytes "$bt" chunkbytes "${ds[@]}" -rounds "$ds_rounds"

# --- read-fresh: each store after its own compaction, before HBase's major
# compaction (which by default comes once a week): the cells each compaction
# replaced are still there, masked by a delete marker each.
# read_fresh TARGET PID...: streamed for the adapter; warmed up as the reads below.
read_fresh() {
  local target=$1
  shift
  local pids=()
  for p in "$@"; do pids+=(-pid "$p"); done
  rec read-fresh "$bt" read -target "$target" -mode streamed "${ds[@]}" -rounds "$ds_rounds" -reps "$fresh_reps" -warmup "$read_warmup" "${pids[@]}"
}
fresh_reps=$((read_reps < 3 ? read_reps : 3))
say "OpenTSDB: stopped (it flushes its row compaction) and started again, read before HBase's major compaction"
stop_tsd ds
start_tsd ds "${prefix}ds-"
read_fresh "opentsdb=$tsd_url" "tsd=$tsd_pid" "hbase=$hbase_pid"

# --- bytes: HFiles after flush + major compaction --------------------------
stop_tsd ds
# OpenTSDB's table as it stands between HBase's weekly major compactions:
# its compacted rows beside the cells they replaced, masked.
rec bytes-fresh "$bt" flush "${prefix}ds-tsdb"
say "flush + major compaction"
rec bytes "$bt" compact -root "$hbase_root" "${prefix}ds-prom-data" "${prefix}ds-prom-uid" "${prefix}ds-tsdb" "${prefix}ds-tsdb-uid"
# The adapter's data families are compressed (raw cells SNAPPY, chunks GZ);
# OpenTSDB's tables are as its create_table.sh makes them (COMPRESSION NONE).
# Its data table once more with each of the adapter's codecs, so that the
# comparison does not rest on the codec alone; SNAPPY last, which the reads
# below then run on, as they did before the chunks were GZ.
rec bytes-gz "$bt" compact -root "$hbase_root" -compression GZ "${prefix}ds-tsdb"
rec bytes-snappy "$bt" compact -root "$hbase_root" -compression SNAPPY "${prefix}ds-tsdb"
if [[ -n $has_compactor ]]; then
  say "compactor: restarting the adapter with ${compactor_flags[*]}"
  stop_pid "$adapter_pid"
  start_adapter ds "${prefix}ds-" "${compactor_flags[@]}"
  wait_series_hours $((ds_series * ((ds_rounds * step_ms + 3600000 - 1) / 3600000)))
  say "adapter: read before HBase's major compaction"
  read_fresh "adapter=$adapter_url" "adapter=$adapter_pid" "hbase=$hbase_pid"
  # The same, before HBase's major compaction: the compactor's sweep of the
  # raw family has dropped the raw cells it folded.
  rec bytes-fresh-compacted "$bt" flush "${prefix}ds-prom-data"
  rec bytes-compacted "$bt" compact -root "$hbase_root" "${prefix}ds-prom-data"
  # The same data set compacted into XOR chunks alone, on tables of its own:
  # what dense cells save on disk, and (its streamed reads below) what they
  # cost a streamed read, which passes XOR chunks on untouched.
  if [[ $adapter_help == *storage.float-chunks* ]]; then
    say "the data set again, compacted into XOR chunks only (--storage.float-chunks=xor)"
    main_url=$adapter_url main_pid=$adapter_pid
    start_adapter dx "${prefix}dx-" "${raw[@]}" --storage.float-chunks=xor
    "$bt" load -target "adapter=$adapter_url" "${ds[@]}" -rounds "$ds_rounds" > /dev/null
    stop_pid "$adapter_pid"
    start_adapter dx "${prefix}dx-" "${compactor_flags[@]}" --storage.float-chunks=xor
    wait_series_hours $((ds_series * ((ds_rounds * step_ms + 3600000 - 1) / 3600000)))
    rec bytes-compacted-xor "$bt" compact -root "$hbase_root" "${prefix}dx-prom-data"
    xor_url=$adapter_url xor_pid=$adapter_pid
    adapter_url=$main_url adapter_pid=$main_pid
  fi
  # The same data set in an adapter on the embedded store, compacted by its
  # compactor: it reads in the rounds below, beside Prometheus.
  say "the data set into an adapter on the embedded store"
  main_url=$adapter_url main_pid=$adapter_pid
  start_embedded emb "$tmp/embedded" "${raw[@]}"
  "$bt" load -target "adapter=$adapter_url" "${ds[@]}" -rounds "$ds_rounds" > /dev/null
  stop_pid "$adapter_pid"
  start_embedded emb "$tmp/embedded" "${compactor_flags[@]}"
  wait_series_hours $((ds_series * ((ds_rounds * step_ms + 3600000 - 1) / 3600000)))
  emb_url=$adapter_url emb_pid=$adapter_pid
  adapter_url=$main_url adapter_pid=$main_pid
else
  say "the adapter has no --compactor flags: no compacted figure"
fi

# --- read: everything back ---------------------------------------------------
say "reads"
start_tsd ds "${prefix}ds-"
# The adapter and Prometheus in rounds, taking turns to go first: a single
# timed stretch each, minutes apart, let the machine's drift decide the ratio
# (0.53x-0.84x over the runs of one day, the read code unchanged). The first
# round warms each up until steady; the later ones only take one untimed pass.
for mode in streamed samples; do
  reps=$read_reps
  [[ $mode == streamed ]] && reps=$read_streamed_reps
  for ((round = 1; round <= read_rounds; round++)); do
    read_warm=(-warmup "$read_warmup")
    ((round == 1)) || read_warm=(-warmup 0s -steady 0)
    order=(adapter prometheus)
    [[ -n ${emb_url:-} ]] && order=(adapter adapter-embedded prometheus)
    [[ $mode == streamed && -n ${xor_url:-} ]] && order=(adapter adapter-xor "${order[@]:1}")
    ((round % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
    for reader in "${order[@]}"; do
      case $reader in
        adapter) rec read "$bt" read -target "adapter=$adapter_url" -mode "$mode" "${ds[@]}" -rounds "$ds_rounds" -reps "$reps" "${read_warm[@]}" \
          -pid "adapter=$adapter_pid" -pid "hbase=$hbase_pid" ;;
        adapter-embedded) rec read-embedded "$bt" read -target "adapter=$emb_url" -mode "$mode" "${ds[@]}" -rounds "$ds_rounds" -reps "$reps" "${read_warm[@]}" \
          -pid "adapter=$emb_pid" ;;
        adapter-xor) rec read-xor "$bt" read -target "adapter=$xor_url" -mode "$mode" "${ds[@]}" -rounds "$ds_rounds" -reps "$reps" "${read_warm[@]}" \
          -pid "adapter=$xor_pid" -pid "hbase=$hbase_pid" ;;
        prometheus) [[ $prom == none ]] || rec read "$bt" read -target "prometheus=$prom_url" -mode "$mode" "${ds[@]}" -rounds "$ds_rounds" -reps "$reps" "${read_warm[@]}" \
          -pid "prometheus=$prom_pid" ;;
      esac
    done
  done
done
rec read "$bt" read -target "opentsdb=$tsd_url" "${ds[@]}" -rounds "$ds_rounds" -reps "$read_reps" -warmup "$read_warmup" \
  -pid "tsd=$tsd_pid" -pid "hbase=$hbase_pid"
# The XOR-only and embedded adapters have read; their compactors' passes stay
# out of the ingest.
[[ -z ${xor_pid:-} ]] || stop_pid "$xor_pid"
[[ -z ${emb_pid:-} ]] || stop_pid "$emb_pid"

# --- ingest: more of the same series, until durable (bench_ingest above) ---
bench_ingest
# Quiet for the receiver step: the ingest's adapter would compact its hours
# as they close, and its TSD has done its part.
stop_pid "$adapter_pid"
stop_tsd ds
say "receiver: the adapter next to Prometheus's remote-write receiver"
bench_receiver

# The histogram step's adapter is its own.
((hist_series == 0)) || bench_histograms

echo
echo "Command: \`make bench\` (scripts/bench.sh). Machine: $machine. Run $(date -u '+%F %H:%M') UTC, $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s (HBase start and builds not counted); load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
echo
"$bt" report -samples $((ds_series * ds_rounds)) "$results"
