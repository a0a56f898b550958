#!/usr/bin/env bash
# Fault tests of the HBase client and the adapter (`make test-faults`): start a
# two-region-server HBase cluster (scripts/hbase.sh cluster-start), run the
# tests of hbase/clustertest against it (a region server frozen for a minute,
# one killed, regions moved and split, the master and ZooKeeper killed and
# started again, each under a steady write load of the client's batches or
# of remote writes to the adapter binary), and stop
# the cluster, also on failure or interrupt. Extra arguments go to go test
# (e.g. -run Kill).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export HBASE_RUN_DIR=${HBASE_RUN_DIR:-$PWD/.hbase-cluster}

cleanup() { scripts/hbase.sh cluster-stop || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
scripts/hbase.sh cluster-start
export $(scripts/hbase.sh cluster-env)

go test -count=1 -p 1 -timeout 30m -v "$@" ./hbase/clustertest/ 2>&1 \
  | grep --line-buffered -Ev '^(=== (RUN|PAUSE|CONT|NAME)|PASS$)'
