#!/usr/bin/env bash
# The exporter alone (make demo runs the whole lab, scripts/demo.sh): runs bin/rota-exporter
# against this machine on a free loopback port and shows its live readings: CPU utilisation
# computed from two scrapes, memory, GPUs (or why they are unavailable), and each collector's
# success and duration. Runs DEMO_SECONDS
# (default 30) or until Ctrl-C, refreshing every DEMO_INTERVAL seconds (default 2), then stops
# the exporter by pid. Without a terminal it prints one block per refresh instead of redrawing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/exporter-lib.sh
. "$top/scripts/exporter-lib.sh"

bin="$top/bin/rota-exporter"
seconds=${DEMO_SECONDS:-30}
interval=${DEMO_INTERVAL:-2}
[ -x "$bin" ] || { echo "demo: $bin missing: run make build" >&2; exit 1; }

log=$(mktemp)
EXPORTER_PID=
cleanup() {
  [ -n "$EXPORTER_PID" ] && stop_pid "$EXPORTER_PID"
  rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_exporter "$bin" "$log"
url="http://127.0.0.1:$EXPORTER_PORT/metrics"
scrape() { http_get 127.0.0.1 "$EXPORTER_PORT" /metrics; }

# cpu_times prints "busy total" seconds summed over CPUs from an exposition on stdin.
cpu_times() {
  awk '/^rota_node_cpu_seconds_total\{/ { t += $2; if ($1 !~ /mode="(idle|iowait)"/) b += $2 }
       END { printf "%.2f %.2f\n", b, t }'
}

render() {
  local now=$1 util=$2 elapsed=$3
  if [ -t 1 ]; then printf '\033[H\033[2J'; fi
  echo "rota-exporter live on $url (pid $EXPORTER_PID), ${elapsed}s of ${seconds}s; Ctrl-C stops"
  echo
  echo "$now" | awk -v util="$util" '
    function gib(b) { return sprintf("%.1f GiB", b / 1073741824) }
    /^rota_node_cpus /                   { cpus = $2 }
    /^rota_node_memory_total_bytes /     { mt = $2 }
    /^rota_node_memory_available_bytes / { ma = $2 }
    /^rota_gpu_devices /                 { gpus = $2 }
    /^rota_exporter_collector_success/   { match($0, /collector="[^"]*"/); c = substr($0, RSTART + 11, RLENGTH - 12); ok[c] = $2 }
    /^rota_exporter_collector_duration/  { match($0, /collector="[^"]*"/); c = substr($0, RSTART + 11, RLENGTH - 12); dur[c] = $2 }
    /^rota_gpu_utilization_ratio/        { match($0, /gpu="[^"]*"/); g = substr($0, RSTART + 5, RLENGTH - 6); gu[g] = $2 }
    /^rota_gpu_compute_processes/        { match($0, /gpu="[^"]*"/); g = substr($0, RSTART + 5, RLENGTH - 6); gp[g] = $2 }
    /^rota_gpu_memory_used_bytes/        { match($0, /gpu="[^"]*"/); g = substr($0, RSTART + 5, RLENGTH - 6); gm[g] = $2 }
    END {
      printf "CPU      %s%% busy over the last interval, %d logical CPUs\n", util, cpus
      printf "Memory   %s available of %s (%.0f%% in use)\n", gib(ma), gib(mt), 100 * (1 - ma / mt)
      if (ok["gpu"] == "") {
        print "GPUs     collector disabled"
      } else if (ok["gpu"] == 0) {
        print "GPUs     unavailable: NVML did not initialise (no driver or no GPU); rota_gpu_devices 0"
      } else {
        printf "GPUs     %d\n", gpus
        for (i = 0; i < gpus; i++) {
          g = i ""
          if (g in gu) printf "  gpu %s  %5.1f%% busy  %d compute processes  %s used%s\n", g, 100 * gu[g], gp[g], gib(gm[g]), gp[g] == 0 ? "  (idle)" : ""
          else printf "  gpu %s  not read this scrape (see rota_gpu_device_errors_total)\n", g
        }
      }
      print ""
      print "collector  success  duration"
      for (c in ok) printf "%-10s %-8s %.6fs\n", c, ok[c], dur[c]
    }'
  echo
  echo "CPU utilisation in PromQL: 1 - sum(rate(rota_node_cpu_seconds_total{mode=~\"idle|iowait\"}[5m])) / sum(rate(rota_node_cpu_seconds_total[5m]))"
  if [ ! -t 1 ]; then echo "----"; fi
}

start=$SECONDS
prev=$(scrape)
read -r pbusy ptotal < <(echo "$prev" | cpu_times)
while (( SECONDS - start < seconds )); do
  sleep "$interval"
  now=$(scrape)
  read -r busy total < <(echo "$now" | cpu_times)
  util=$(awk -v b="$busy" -v pb="$pbusy" -v t="$total" -v pt="$ptotal" \
    'BEGIN { d = t - pt; if (d <= 0) print "n/a"; else printf "%.1f", 100 * (b - pb) / d }')
  render "$now" "$util" $((SECONDS - start))
  pbusy=$busy ptotal=$total
done
echo "demo: done; stopping rota-exporter (pid $EXPORTER_PID). Its log:"
cat "$log"
