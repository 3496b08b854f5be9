#!/usr/bin/env bash
# Checks rota-exporter against real GPUs: run it on a machine with an NVIDIA driver, in a clone of
# this repository. Builds rota-exporter (go build; NVML needs cgo, so a C compiler too; or set
# ROTA_EXPORTER_BIN to a binary built elsewhere), starts it on a free loopback port, scrapes
# /metrics twice a few seconds apart, prints the rota_gpu_* and collector meta series and the
# result of `promtool check metrics` (skipped when promtool is absent), checks what it can, and
# stops the exporter by pid. Needs bash and Go only (no curl). Exit code 0 when every check holds.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/exporter-lib.sh
. "$top/scripts/exporter-lib.sh"

work=$(mktemp -d)
EXPORTER_PID=
cleanup() {
  [ -n "$EXPORTER_PID" ] && stop_pid "$EXPORTER_PID"
  rm -rf "$work"
}
trap cleanup EXIT

bin=${ROTA_EXPORTER_BIN:-}
if [ -z "$bin" ]; then
  command -v go >/dev/null || { echo "gpu-check: go not found (or set ROTA_EXPORTER_BIN)" >&2; exit 1; }
  if ! command -v "$(go env CC 2>/dev/null || echo gcc)" >/dev/null && ! command -v cc >/dev/null; then
    echo "gpu-check: no C compiler: go-nvml needs cgo (apt-get install gcc), or set ROTA_EXPORTER_BIN" >&2
    exit 1
  fi
  bin="$work/rota-exporter"
  echo "== building rota-exporter"
  (cd "$top" && CGO_ENABLED=1 go build -o "$bin" ./cmd/rota-exporter 2>"$work/build.log") || { cat "$work/build.log" >&2; exit 1; }
fi

echo "== driver"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,driver_version,utilization.gpu,memory.used,power.draw,temperature.gpu --format=csv || true
else
  echo "nvidia-smi not found (the check goes on; NVML is what counts)"
fi

start_exporter "$bin" "$work/exporter.log" --log.level=debug
echo "== rota-exporter pid $EXPORTER_PID on 127.0.0.1:$EXPORTER_PORT"
http_get 127.0.0.1 "$EXPORTER_PORT" /metrics >"$work/scrape1.txt"
sleep 3
http_get 127.0.0.1 "$EXPORTER_PORT" /metrics >"$work/scrape2.txt"

for i in 1 2; do
  echo "== scrape $i: rota_gpu_* and collector meta series"
  grep -E '^rota_(gpu_|exporter_collector_)' "$work/scrape$i.txt" || echo "(none)"
done

echo "== promtool check metrics"
promtool=$(command -v promtool || true)
[ -z "$promtool" ] && [ -x "$top/.tools/bin/promtool" ] && promtool="$top/.tools/bin/promtool"
if [ -n "$promtool" ]; then
  if "$promtool" check metrics <"$work/scrape2.txt"; then echo "promtool: clean"; else echo "promtool: FAILED"; fail=1; fi
else
  echo "promtool not found: skipped"
fi

echo "== checks on scrape 2"
fail=${fail:-0}
value() { awk -v s="$1" 'index($0, s) == 1 { print $NF; exit }' "$work/scrape2.txt"; }
check() { # check DESCRIPTION CONDITION
  if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi
}
success=$(value 'rota_exporter_collector_success{collector="gpu"}')
devices=$(value 'rota_gpu_devices ')
check "gpu collector success is 1 (got ${success:-none})" '[ "${success:-0}" = 1 ]'
check "rota_gpu_devices >= 1 (got ${devices:-none})" '[ "${devices:-0}" -ge 1 ] 2>/dev/null'
for ((g = 0; g < ${devices:-0}; g++)); do
  for m in info utilization_ratio memory_used_bytes memory_total_bytes compute_processes power_watts energy_joules_total temperature_celsius; do
    check "gpu $g has rota_gpu_$m" "grep -q '^rota_gpu_$m{.*gpu=\"$g\"' '$work/scrape2.txt'"
  done
  # NVML GPM (Hopper and later): SM activity, SM occupancy and tensor activity from the second
  # scrape on, each a ratio.
  if grep -q "^rota_gpu_info{.*gpu=\"$g\".*name=\"[^\"]*[HB][0-9]\{3\}" "$work/scrape2.txt"; then
    for m in sm_active_ratio sm_occupancy_ratio tensor_active_ratio; do
      v=$(awk -v s="rota_gpu_$m{gpu=\"$g\"" 'index($0, s) == 1 { print $NF; exit }' "$work/scrape2.txt")
      check "gpu $g (Hopper or later) has rota_gpu_$m in [0, 1] (got ${v:-none})" \
        "[ -n '$v' ] && awk -v v='$v' 'BEGIN { exit !(v >= 0 && v <= 1) }'"
    done
  fi
done
check "every device error counter carries uuid" "! grep '^rota_gpu_device_errors_total{' '$work/scrape2.txt' | grep -qv 'uuid=\"GPU-'"
errors=$(awk '/^rota_gpu_device_errors_total/ { s += $NF } END { print s + 0 }' "$work/scrape2.txt")
check "no device errors (rota_gpu_device_errors_total sums to $errors)" '[ "$errors" = 0 ]'
e1=$(awk '/^rota_gpu_energy_joules_total/ { s += $NF } END { print s + 0 }' "$work/scrape1.txt")
e2=$(awk '/^rota_gpu_energy_joules_total/ { s += $NF } END { print s + 0 }' "$work/scrape2.txt")
check "energy counters did not go down ($e1 J -> $e2 J)" "awk -v a='$e1' -v b='$e2' 'BEGIN { exit !(b >= a) }'"

echo "== exporter log"
cat "$work/exporter.log"
if [ "$fail" -ne 0 ]; then echo "gpu-check: FAILED"; exit 1; fi
echo "gpu-check: all checks passed"
