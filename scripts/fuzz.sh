#!/usr/bin/env bash
# fuzz.sh [REGEXP]: runs every fuzz target of the module whose "package.FuzzName"
# matches REGEXP (all of them without one), one after the other, FUZZTIME each
# (30s). A failing input is kept where Go keeps it, testdata/fuzz/FuzzName/ in the
# target's package: commit it with its fix, and plain `go test` runs it from then on.
#
# FUZZMINIMIZETIME (2s) bounds the minimizing of each new input: Go's default of
# 60 s minimizes every interesting input a worker finds before it fuzzes on, and a
# target whose inputs take 0.1 ms then spends nearly all its time minimizing
# (FuzzChunkRoundTrip: some 11 executions a second over 150 s, against thousands).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pattern=${1:-.}
fuzztime=${FUZZTIME:-30s} minimize=${FUZZMINIMIZETIME:-2s}
failed=()
ran=0 races=0
# count_kept DIR: the number of inputs kept in DIR (0 when it does not exist yet:
# with pipefail, `ls` of a missing directory would end the script).
count_kept() { if [[ -d $1 ]]; then find "$1" -type f | wc -l; else echo 0; fi; }
# The targets, found in the sources: listing them with go test would build and
# start every package's tests.
while read -r dir target; do
  pkg=$(go list "./$dir")
  [[ $pkg.$target =~ $pattern ]] || continue
  ran=$((ran + 1))
  echo "fuzz.sh: $pkg $target for $fuzztime"
  kept="$dir/testdata/fuzz/$target"
  before=$(count_kept "$kept")
  out=$(mktemp)
  if go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" < /dev/null 2>&1 | tee "$out"; then
    rm -f "$out"
    continue
  fi
  # Go 1.26's coordinator can fail a target at the end of -fuzztime with a
  # bare "context deadline exceeded" and no input (go.dev/issue/75804, fixed
  # in Go 1.27): not a finding when no input was written and the kept ones
  # pass.
  if [[ $(count_kept "$kept") -eq $before ]] && grep -q '^    context deadline exceeded$' "$out" &&
    go test -run "^$target\$" "$pkg" < /dev/null > /dev/null; then
    echo "fuzz.sh: $pkg $target: Go's end-of-fuzztime race (go.dev/issue/75804), no input written: not a finding"
    races=$((races + 1))
  else
    failed+=("$pkg $target")
  fi
  rm -f "$out"
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | grep -v '^\./\.' |
  sed -E 's#^\./(.*)/[^/]*:func (Fuzz.*)#\1 \2#' | sort)
echo "fuzz.sh: $ran targets, ${#failed[@]} failed, $races ended by Go's deadline race"
for f in "${failed[@]}"; do echo "fuzz.sh: FAILED $f"; done
[[ ${#failed[@]} -eq 0 ]]
