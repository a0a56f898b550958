#!/usr/bin/env bash
# Builds the real Prometheus used by the end-to-end tests from the Go module
# proxy and caches the binary between runs. Prints the binary's path.
#
# Prometheus 3.15.0 is module version v0.315.0. It is built in a throwaway
# module that requires it and repeats its one `replace` line; no build tags, so
# the web UI's assets are absent but the HTTP API works.
set -euo pipefail

version=v0.315.0
cache=${PROMHBASE_CACHE:-$HOME/.cache/prom-hbase}
bin=$cache/prometheus-$version/prometheus

if [[ -x $bin ]] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$bin")"
cd "$work"
cat > go.mod <<MOD
module prombuild

go 1.26

require github.com/prometheus/prometheus $version

replace cloud.google.com/go => cloud.google.com/go v0.123.0
MOD
cat > tools.go <<'GO'
//go:build tools

package prombuild

import _ "github.com/prometheus/prometheus/cmd/prometheus"
GO
echo "building Prometheus $version (several minutes the first time)..." >&2
GOFLAGS=-mod=mod go get github.com/prometheus/prometheus/cmd/prometheus@$version >&2
GOFLAGS=-mod=mod go build -o "$bin.tmp" github.com/prometheus/prometheus/cmd/prometheus >&2
mv "$bin.tmp" "$bin"
echo "$bin"
