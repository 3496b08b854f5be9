#!/usr/bin/env bash
# make fuzz: runs every fuzz target of the module (the parsers of outside input, the store's
# decoders, the rule writer) for FUZZTIME each (default 30s), one after another, beyond the
# seeds `make test` runs. A failing input is written by Go under the package's
# testdata/fuzz/<target>/, where `go test` replays it from then on (commit it with the fix).
# Prints one line per target; exits 1 when any failed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH="$top/.tools/bin:$PATH" # promtool, for the targets whose package tests use it
fuzztime=${FUZZTIME:-30s}
[[ $fuzztime =~ ^[1-9][0-9]*(s|m|h|x)$ ]] || { echo "fuzz: FUZZTIME=$fuzztime: want a duration (30s, 2m) or a count (1000x)" >&2; exit 1; }

# `go test -list` prints a package's matching names, then its "ok" line; a package whose tests
# do not build fails the listing (its names are not taken for the next package's).
list=$(go test -list '^Fuzz' ./... 2>&1) || { echo "fuzz: go test -list failed:" >&2; grep -Ev '^(Fuzz|ok |\? )' <<<"$list" | head -40 >&2; exit 1; }
targets=() names=()
while read -r first second _; do
  case "$first" in
    Fuzz*) names+=("$first") ;;
    ok)
      for n in "${names[@]}"; do targets+=("$second $n"); done
      names=() ;;
  esac
done <<<"$list"
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no fuzz target found" >&2; exit 1; }

failed=0
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  log=$(mktemp)
  # The seeds and kept failing inputs first, each once (a short -fuzztime can end the fuzzing
  # before all of them ran), then the fuzzing.
  if go test -count=1 -run "^$name\$" "$pkg" >"$log" 2>&1 &&
    go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
    echo "ok      $pkg $name"
  else
    echo "FAILED  $pkg $name:"
    grep -v '^fuzz: elapsed' "$log" | head -40
    failed=$((failed + 1))
  fi
  rm -f "$log"
done
echo "== ${#targets[@]} fuzz targets, $failed failed, $fuzztime each"
[ "$failed" -eq 0 ]
