#!/usr/bin/env bash
# The deployment as users run it, tested for real (`make compose-test`):
#
#  1. starts a private Docker engine (data root, exec root and socket in a
#     temporary directory; stopped and removed at the end, also on failure);
#  2. makes the base images locally (no registry is needed): a Debian rootfs
#     with a Java 17 runtime from mmdebstrap (cached in $PROMHBASE_CACHE), a
#     Prometheus image from scripts/prometheus.sh's binary, a node-exporter
#     image from Debian's package;
#  3. builds the HBase and adapter images through docker-compose.yml's own
#     build sections on those bases, with the adapter binaries built here and
#     HBase's jars resolved here (scripts/hbase.sh), and brings the stack up
#     without Grafana (it cannot be installed here; its dashboard is tested
#     by deploy/dashboard_test.go), plus a second Prometheus, "reader", that
#     only reads through the adapter;
#  4. runs deploy's TestComposeStack: Prometheus's remote write lands in the
#     HBase container through the adapter, a PromQL query through remote read
#     returns it, and after the adapter container is replaced nothing is lost;
#  5. `down -v`, then the same for docker-compose.embedded.yml
#     (TestComposeEmbedded), then `down -v` again.
#
# Needs root (dockerd), Debian's docker.io, docker-compose and mmdebstrap;
# installs them with apt-get when they are missing and it runs as root.
# COMPOSE_TEST_KEEP=1 leaves the temporary directory (logs) in place.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
cache=${PROMHBASE_CACHE:-$HOME/.cache/prom-hbase}
base_packages="ca-certificates openjdk-17-jre-headless prometheus-node-exporter"
start=$SECONDS

log() { echo "compose-test [$((SECONDS - start))s]: $*" >&2; }

ensure_tools() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  ((${#missing[@]} == 0)) && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    log "missing ${missing[*]}: install them (Debian: apt-get install docker.io docker-compose mmdebstrap) and run as root"
    return 1
  fi
  log "installing ${missing[*]} with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# shellcheck source=scripts/ports.sh
source "$repo/scripts/ports.sh"

ensure_tools
tmp=$(mktemp -d /tmp/promhbase-compose.XXXXXX)
export DOCKER_HOST="unix://$tmp/docker.sock" DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0
dockerd_pid=""

compose_down() {
  docker-compose down -v --remove-orphans --timeout 20 >&2 || true
}

cleanup() {
  local status=$?
  if [[ -n $dockerd_pid ]]; then
    if ((status != 0)) && [[ -n ${COMPOSE_FILE:-} ]]; then
      log "failed; last log lines of each service:"
      docker-compose logs --no-color --tail 60 >&2 || true
    fi
    [[ -n ${COMPOSE_FILE:-} ]] && compose_down
    kill -TERM "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$dockerd_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$dockerd_pid" 2>/dev/null || true
  fi
  rm -rf "$repo/deploy/.prebuilt" "$repo/deploy/hbase/prebuilt"
  if [[ ${COMPOSE_TEST_KEEP:-} == 1 ]]; then
    log "kept $tmp"
  else
    # Whatever the engine left mounted under its roots goes first.
    grep -o " $tmp/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$tmp" || log "could not remove all of $tmp"
  fi
  log "done: exit status $status after $((SECONDS - start))s"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_dockerd() {
  log "starting a private dockerd in $tmp"
  dockerd --data-root "$tmp/root" --exec-root "$tmp/exec" -H "$DOCKER_HOST" \
    --pidfile "$tmp/dockerd.pid" > "$tmp/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then return 0; fi
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  log "dockerd did not come up:"
  tail -n 30 "$tmp/dockerd.log" >&2
  return 1
}

# The Debian base of every local image, made once and cached as a tarball.
base_image() {
  local key tar
  key=$(echo "$base_packages" | sha256sum | cut -c1-12)
  tar=$cache/docker/base-bookworm-$key.tar
  if [[ ! -s $tar ]]; then
    mkdir -p "$cache/docker"
    log "making the Debian base rootfs with mmdebstrap (once; about a minute)"
    mmdebstrap --quiet --variant=apt --include="${base_packages// /,}" bookworm "$tar.tmp.tar" >&2
    mv "$tar.tmp.tar" "$tar"
  fi
  base="promhbase-local/base:$key"
  docker import "$tar" "$base" >/dev/null
}

# An image from the base plus a Dockerfile body, in a throwaway context.
local_image() {
  local name=$1 ctx=$tmp/ctx-${1//[\/:]/-}
  mkdir -p "$ctx"
  { echo "FROM $base"; cat; } > "$ctx/Dockerfile"
  [[ -n ${2:-} ]] && cp "$2" "$ctx/"
  docker build -q -t "$name" "$ctx" >/dev/null
}

prepare_inputs() {
  log "building the adapter binaries (static)"
  mkdir -p deploy/.prebuilt
  CGO_ENABLED=0 go build -trimpath -o deploy/.prebuilt/ ./cmd/adapter ./deploy/healthcheck

  log "HBase jars (scripts/hbase.sh resolves them from Maven Central once)"
  local cp
  cp=$(scripts/hbase.sh classpath)
  mkdir -p deploy/hbase/prebuilt/lib deploy/hbase/prebuilt/classes
  tr ':' '\n' <<< "$cp" | xargs -r -I{} cp -l {} deploy/hbase/prebuilt/lib/ 2>/dev/null \
    || tr ':' '\n' <<< "$cp" | xargs -r -I{} cp {} deploy/hbase/prebuilt/lib/
  javac -nowarn -cp "$cp" -d deploy/hbase/prebuilt/classes deploy/hbase/HealthCheck.java

  log "Prometheus binary (scripts/prometheus.sh)"
  prometheus_bin=$(scripts/prometheus.sh)
}

build_local_images() {
  base_image
  local_image promhbase-local/prometheus:3.15.0 "$prometheus_bin" <<'EOF'
COPY prometheus /bin/prometheus
RUN mkdir -p /prometheus /etc/prometheus && chown 65534:65534 /prometheus
USER 65534
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
EOF
  local_image promhbase-local/node-exporter:debian <<'EOF'
USER 65534
EXPOSE 9100
ENTRYPOINT ["/usr/bin/prometheus-node-exporter"]
EOF
  export COMPOSE_TEST_BASE_IMAGE=$base
  export COMPOSE_TEST_PROMETHEUS_IMAGE=promhbase-local/prometheus:3.15.0
  export COMPOSE_TEST_NODE_EXPORTER_IMAGE=promhbase-local/node-exporter:debian
}

wait_healthy() {
  local svc=$1 timeout=$2 id state deadline=$((SECONDS + $2))
  id=$(docker-compose ps -q "$svc")
  while :; do
    state=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$id")
    case $state in
      "running healthy") log "$svc is healthy"; return 0 ;;
      running*) ;;
      *) log "$svc is $state"; return 1 ;;
    esac
    if ((SECONDS > deadline)); then
      log "$svc not healthy after ${timeout}s ($state); last health checks:"
      docker inspect -f '{{range .State.Health.Log}}{{.Output}}{{end}}' "$id" >&2 || true
      return 1
    fi
    sleep 2
  done
}

# compose ARGS...: docker-compose, its output in $tmp/compose.log, shown on failure.
compose() {
  if ! docker-compose "$@" >> "$tmp/compose.log" 2>&1; then
    log "docker-compose $* failed:"
    tail -n 40 "$tmp/compose.log" >&2
    return 1
  fi
}

run_go_test() {
  go test -count=1 -timeout 15m -v -run "^$1\$" ./deploy 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)' >&2
}

start_dockerd
prepare_inputs
build_local_images

export PROMHBASE_BIND=127.0.0.1
for v in PROMETHEUS_PORT ADAPTER_PORT GRAFANA_PORT COMPOSE_TEST_READER_PORT; do
  pick_port "$v"
  export "${v?}"
done

log "stack: building images and starting hbase, adapter, prometheus, node-exporter, reader"
export COMPOSE_PROJECT_NAME=promhbasetest COMPOSE_FILE=docker-compose.yml:deploy/compose-test/stack.yml
compose build
compose up -d --no-build hbase adapter prometheus node-exporter reader
wait_healthy hbase 600
wait_healthy adapter 120
log "stack is up; checking it"
COMPOSE_TEST_STACK=1 \
  COMPOSE_TEST_PROMETHEUS_URL=http://127.0.0.1:$PROMETHEUS_PORT \
  COMPOSE_TEST_READER_URL=http://127.0.0.1:$COMPOSE_TEST_READER_PORT \
  COMPOSE_TEST_ADAPTER_URL=http://127.0.0.1:$ADAPTER_PORT \
  run_go_test TestComposeStack
compose_down

log "embedded: starting adapter and prometheus"
export COMPOSE_PROJECT_NAME=promhbasetestembedded COMPOSE_FILE=docker-compose.embedded.yml:deploy/compose-test/embedded.yml
compose up -d --build
wait_healthy adapter 60
COMPOSE_TEST_EMBEDDED=1 \
  COMPOSE_TEST_PROMETHEUS_URL=http://127.0.0.1:$PROMETHEUS_PORT \
  COMPOSE_TEST_ADAPTER_URL=http://127.0.0.1:$ADAPTER_PORT \
  run_go_test TestComposeEmbedded
compose_down
unset COMPOSE_FILE
log "PASS"
