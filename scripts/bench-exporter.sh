#!/usr/bin/env bash
# make bench, second half: runs bin/rota-exporter and Debian's prometheus-node-exporter (CPU and
# meminfo collectors only, the same facts) side by side on this machine, scrapes each
# BENCH_SCRAPES times (default 2000) with the same client (one curl process, one kept-alive
# connection), and prints each exporter's CPU seconds per 1000 scrapes (utime+stime from
# /proc/PID/stat) and peak RSS (VmHWM), and rota-exporter's cost as a ratio of node_exporter's.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/exporter-lib.sh
. "$top/scripts/exporter-lib.sh"

n=${BENCH_SCRAPES:-2000}
rota="$top/bin/rota-exporter"
node=$(command -v prometheus-node-exporter || true)
[ -x "$rota" ] || { echo "bench: $rota missing: run make build" >&2; exit 1; }
[ -n "$node" ] || { echo "bench: prometheus-node-exporter missing: run make tools" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench: curl missing: run make tools" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  rm -rf "$work"
}
trap cleanup EXIT

start_exporter "$rota" "$work/rota.log"
rota_pid=$EXPORTER_PID rota_port=$EXPORTER_PORT
pids+=("$rota_pid")
start_exporter "$node" "$work/node.log" --collector.disable-defaults --collector.cpu --collector.meminfo
node_pid=$EXPORTER_PID node_port=$EXPORTER_PORT
pids+=("$node_pid")

tck=$(getconf CLK_TCK)
# cpu_ticks PID: utime+stime in clock ticks (fields 14 and 15; the name in field 2 may hold spaces).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

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

# The machine may be busy with other work: the scrapes run in BENCH_ROUNDS rounds (default 4),
# alternating which exporter goes first, and the ticks are summed.
rounds=${BENCH_ROUNDS:-4}
per_round=$(( (n + rounds - 1) / rounds ))
total=$((per_round * rounds))
echo "bench: $total scrapes each in $rounds alternating rounds; rota-exporter $("$rota" --version 2>&1 | head -1 | sed 's/^rota-exporter, //')"
echo "bench: $("$node" --version 2>&1 | head -1)"
scrape "$rota_port" 50 # warm-up: first scrapes pay for lazy initialisation
scrape "$node_port" 50
rota_ticks=0 node_ticks=0
for ((r = 0; r < rounds; r++)); do
  if ((r % 2 == 0)); then
    rota_ticks=$((rota_ticks + $(run_scrapes "$rota_pid" "$rota_port" "$per_round")))
    node_ticks=$((node_ticks + $(run_scrapes "$node_pid" "$node_port" "$per_round")))
  else
    node_ticks=$((node_ticks + $(run_scrapes "$node_pid" "$node_port" "$per_round")))
    rota_ticks=$((rota_ticks + $(run_scrapes "$rota_pid" "$rota_port" "$per_round")))
  fi
done
anon_kib() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"; }
awk -v tck="$tck" -v n="$total" \
  -v rt="$rota_ticks" -v rh="$(hwm_kib "$rota_pid")" -v ra="$(anon_kib "$rota_pid")" \
  -v nt="$node_ticks" -v nh="$(hwm_kib "$node_pid")" -v na="$(anon_kib "$node_pid")" 'BEGIN {
    rc = rt / tck * 1000 / n; nc = nt / tck * 1000 / n
    printf "%-15s %22s %18s %18s\n", "exporter", "CPU s / 1000 scrapes", "peak RSS (VmHWM)", "RssAnon at end"
    printf "%-15s %22.3f %14.1f MiB %14.1f MiB\n", "rota-exporter", rc, rh / 1024, ra / 1024
    printf "%-15s %22.3f %14.1f MiB %14.1f MiB\n", "node_exporter", nc, nh / 1024, na / 1024
    printf "ratio rota/node: CPU %s, peak RSS %.2f, RssAnon %.2f\n", (nc > 0 ? sprintf("%.2f", rc / nc) : "n/a"), rh / nh, ra / na
  }'
