#!/usr/bin/env bash
# Static checks, the same for `make lint` and the test command: gofmt, go vet
# and staticcheck (pinned in go.mod's tool block). Fails when anything is unclean.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './.hbase/*' -not -path './.git/*'))
if [[ -n $unformatted ]]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1
fi
go vet ./...
go tool staticcheck ./...
