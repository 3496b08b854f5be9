#!/usr/bin/env bash
# make bench, second half: runs bin/rota-exporter and Debian's prometheus-node-exporter (CPU and
# meminfo collectors only, the same facts) side by side on this machine, scrapes each
# BENCH_SCRAPES times (default 2000) with the same client (one curl process, one kept-alive
# connection), and prints each exporter's CPU seconds per 1000 scrapes (utime+stime from
# /proc/PID/stat) and peak RSS (VmHWM), and rota-exporter's cost as a ratio of node_exporter's.
# It does so BENCH_RUNS times (default 5), each with both exporters started afresh, and prints
# every run, then the median and range of each figure and ratio: the machine is shared and one
# run is noisy.
#
# Both binaries run from copies written into a temporary folder, never from where they lie: a
# binary the Go linker has just written (make build right before make bench) sits in the page
# cache in a state in which nearly the whole file ends up mapped (all of .text, against 89% of
# it for a copy), and measured 1.5 to 2.4 MiB more file-backed RSS (VmHWM 24.0
# instead of 21.8 MiB for the same build) than the same bytes copied or read back from disk,
# which is how a packaged exporter, and node_exporter, is always run. Copying both puts them in
# the same state.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/exporter-lib.sh
. "$top/scripts/exporter-lib.sh"

n=${BENCH_SCRAPES:-2000}
runs=${BENCH_RUNS:-5}
rota_src="$top/bin/rota-exporter"
node_src=$(command -v prometheus-node-exporter || true)
[ -x "$rota_src" ] || { echo "bench: $rota_src missing: run make build" >&2; exit 1; }
[ -n "$node_src" ] || { echo "bench: prometheus-node-exporter missing: run make tools" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench: curl missing: run make tools" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

rota="$work/rota-exporter" node="$work/prometheus-node-exporter"
cat "$rota_src" >"$rota"
cat "$node_src" >"$node"
chmod +x "$rota" "$node"

tck=$(getconf CLK_TCK)
# cpu_ticks PID: utime+stime in clock ticks (fields 14 and 15; the name in field 2 may hold spaces).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# scrape PORT COUNT: COUNT scrapes of /metrics through one curl process (one connection).
scrape() {
  local cfg="$work/curl-$1.cfg" i
  : >"$cfg"
  for ((i = 0; i < $2; i++)); do printf 'url = "http://127.0.0.1:%s/metrics"\noutput = "/dev/null"\n' "$1" >>"$cfg"; done
  curl -sS --fail -K "$cfg"
}

# run_scrapes PID PORT COUNT prints the clock ticks PID spent serving COUNT scrapes.
run_scrapes() {
  local before after
  before=$(cpu_ticks "$1")
  scrape "$2" "$3"
  after=$(cpu_ticks "$1")
  echo $((after - before))
}

# The machine may be busy with other work: in each run the scrapes go in BENCH_ROUNDS rounds
# (default 4), alternating which exporter goes first, and the ticks are summed.
rounds=${BENCH_ROUNDS:-4}
per_round=$(((n + rounds - 1) / rounds))
total=$((per_round * rounds))
echo "bench: $runs runs of $total scrapes each in $rounds alternating rounds; rota-exporter $("$rota" --version 2>&1 | head -1 | sed 's/^rota-exporter, //')"
echo "bench: $("$node" --version 2>&1 | head -1)"
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

results="$work/results"
: >"$results"
for ((run = 1; run <= runs; run++)); do
  pids=()
  start_exporter "$rota" "$work/rota.log"
  rota_pid=$EXPORTER_PID rota_port=$EXPORTER_PORT
  pids+=("$rota_pid")
  start_exporter "$node" "$work/node.log" --collector.disable-defaults --collector.cpu --collector.meminfo
  node_pid=$EXPORTER_PID node_port=$EXPORTER_PORT
  pids+=("$node_pid")

  scrape "$rota_port" 50 # warm-up: first scrapes pay for lazy initialisation
  scrape "$node_port" 50
  rota_ticks=0 node_ticks=0
  for ((r = 0; r < rounds; r++)); do
    if (((r + run) % 2 == 1)); then
      rota_ticks=$((rota_ticks + $(run_scrapes "$rota_pid" "$rota_port" "$per_round")))
      node_ticks=$((node_ticks + $(run_scrapes "$node_pid" "$node_port" "$per_round")))
    else
      node_ticks=$((node_ticks + $(run_scrapes "$node_pid" "$node_port" "$per_round")))
      rota_ticks=$((rota_ticks + $(run_scrapes "$rota_pid" "$rota_port" "$per_round")))
    fi
  done
  # run rota_ticks rota_hwm rota_anon node_ticks node_hwm node_anon
  echo "$run $rota_ticks $(status_kib "$rota_pid" VmHWM) $(status_kib "$rota_pid" RssAnon)" \
    "$node_ticks $(status_kib "$node_pid" VmHWM) $(status_kib "$node_pid" RssAnon)" >>"$results"
  stop_pid "$rota_pid"
  stop_pid "$node_pid"
  pids=()
done

awk -v tck="$tck" -v n="$total" '
  function median(a, k,   i, j, t) {
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  function summary(name, a, k, fmt,   lo, hi, i) {
    lo = hi = a[1]
    for (i = 2; i <= k; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    printf "  %-28s median " fmt ", range " fmt " to " fmt "\n", name, median(a, k), lo, hi
  }
  BEGIN {
    printf "%-4s %-15s %22s %18s %18s\n", "run", "exporter", "CPU s / 1000 scrapes", "peak RSS (VmHWM)", "RssAnon at end"
  }
  {
    k++
    rc[k] = $2 / tck * 1000 / n; rh[k] = $3 / 1024; ra[k] = $4 / 1024
    nc[k] = $5 / tck * 1000 / n; nh[k] = $6 / 1024; na[k] = $7 / 1024
    cr[k] = nc[k] > 0 ? rc[k] / nc[k] : 0; hr[k] = rh[k] / nh[k]; ar[k] = ra[k] / na[k]
    printf "%-4d %-15s %22.3f %14.1f MiB %14.1f MiB\n", $1, "rota-exporter", rc[k], rh[k], ra[k]
    printf "%-4s %-15s %22.3f %14.1f MiB %14.1f MiB\n", "", "node_exporter", nc[k], nh[k], na[k]
    printf "%-4s ratio rota/node: CPU %.2f, peak RSS %.3f, RssAnon %.2f\n", "", cr[k], hr[k], ar[k]
  }
  END {
    printf "over %d runs:\n", k
    summary("rota CPU s / 1000 scrapes", rc, k, "%.3f")
    summary("node CPU s / 1000 scrapes", nc, k, "%.3f")
    summary("rota peak RSS MiB", rh, k, "%.1f")
    summary("node peak RSS MiB", nh, k, "%.1f")
    summary("ratio CPU", cr, k, "%.2f")
    summary("ratio peak RSS", hr, k, "%.3f")
    summary("ratio RssAnon", ar, k, "%.2f")
  }' "$results"
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
