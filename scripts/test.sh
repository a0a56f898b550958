#!/usr/bin/env bash
# The whole test run (`make test`): static checks, then every package's tests
# against one real HBase started for the run, then the end-to-end suite with a
# real Prometheus. HBase is stopped at the end, also on failure or interrupt.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export HBASE_RUN_DIR=${HBASE_RUN_DIR:-$PWD/.hbase}

echo "== static checks"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.hbase/*'))
if [[ -n $unformatted ]]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1
fi
go vet ./...
go tool staticcheck ./...

echo "== Prometheus for the end-to-end suite"
PROMHBASE_PROMETHEUS=$(scripts/prometheus.sh)
export PROMHBASE_PROMETHEUS

echo "== HBase"
cleanup() { scripts/hbase.sh stop || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
scripts/hbase.sh start
export $(scripts/hbase.sh env)

echo "== unit, conformance and HBase tests"
status=0
go test -count=1 -timeout 20m $(go list ./... | grep -v /e2e) || status=$?

echo "== end-to-end"
go test -count=1 -timeout 30m -v ./e2e/... 2>&1 | grep -Ev '^(=== (RUN|PAUSE|CONT)|\s+--- PASS)' || status=$?
exit $status
