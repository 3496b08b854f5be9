#!/usr/bin/env bash
# make demo: rota's whole loop on this machine (bin/rota-lab, package lab). Starts the lab fleet
# (CPU servers behind ipmi_sim BMCs, GPU servers behind the Redfish emulator, a Slurm cluster
# whose slurmd for a server runs only while its BMC says on, a rota-exporter per server),
# Prometheus, Alertmanager and rota, with only each pool's floor on; submits a burst of light
# and heavy jobs; shows `rotactl status --watch` while rota powers the right servers on and,
# once the cluster is quiet, drains and powers them off again; then prints a summary
# (server-hours and spend against all-on, Slurm's record of the jobs, the cost cookbook's PromQL
# queries, rotactl report's books of the month so far). Runs DEMO_SECONDS (default 210) or until Ctrl-C, then stops everything the lab
# started, by pid. A second run starts clean. Scripts/demo-exporter.sh is the exporter alone.
# LAB_PROFILE=kubernetes runs the same demo with a Kubernetes control plane instead of Slurm
# (rota-lab up --profile kubernetes): the jobs are pods, rota drives the cluster through its
# kubernetes adapter under the role of deploy/kubernetes/rbac.yaml.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
profile=${LAB_PROFILE:-slurm}
seconds=${DEMO_SECONDS:-210}
interval=${DEMO_INTERVAL:-5}
dir=$top/.lab
for b in rota rotactl rota-lab rota-lab-exporter rota-redfish-emulator; do
  [ -x "bin/$b" ] || { echo "demo: bin/$b missing: run make build" >&2; exit 1; }
done

bin/rota-lab --dir "$dir" down >/dev/null # whatever a killed demo left behind
rm -f "$dir/env"                            # written again once this lab is up
log=$(mktemp)
up=
cleanup() {
  if [ -n "$up" ]; then
    kill -TERM "$up" 2>/dev/null || true
    wait "$up" 2>/dev/null || true
  fi
  bin/rota-lab --dir "$dir" down >/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: starting the lab in $dir (log: $dir/log/, lab supervisor log: $log)"
# In its own session, so that Ctrl-C reaches the watch below, not the lab: the summary is taken
# from the running lab, then cleanup stops it.
setsid bin/rota-lab --dir "$dir" up --on floor --profile "$profile" >"$log" 2>&1 &
up=$!
for ((i = 0; i < 600; i++)); do
  [ -s "$dir/env" ] && break
  kill -0 "$up" 2>/dev/null || { echo "demo: the lab failed to start:" >&2; tail -20 "$log" >&2; exit 1; }
  sleep 0.5
done
[ -s "$dir/env" ] || { echo "demo: the lab did not start within 5 minutes" >&2; tail -20 "$log" >&2; exit 1; }
# shellcheck source=/dev/null
. "$dir/env"
export ROTA_TOKEN_FILE
echo "demo: lab up: rota $ROTA_URL, Prometheus $PROMETHEUS_URL, Alertmanager $ALERTMANAGER_URL"
if [ "$profile" = kubernetes ]; then
  echo "demo: Kubernetes: KUBECONFIG=$KUBECONFIG (kubectl get nodes,pods -A); rota: bin/rotactl status --rota.url=$ROTA_URL"
else
  export SLURM_CONF
  echo "demo: Slurm: SLURM_CONF=$SLURM_CONF sinfo; rota: bin/rotactl status --rota.url=$ROTA_URL"
fi
bin/rota-lab --dir "$dir" workload --light 8 --heavy 4
# Ctrl-C ends the watch (rotactl exits cleanly on SIGINT), and the summary still follows.
trap : INT
timeout --foreground "$seconds" bin/rotactl status --watch --watch.interval="${interval}s" --rota.url="$ROTA_URL" || true
trap 'exit 130' INT

echo
bin/rota-lab --dir "$dir" summary
# promql QUERY prints the query's first value (or "none").
promql() {
  curl -sS --fail -G "$PROMETHEUS_URL/api/v1/query" --data-urlencode "query=$1" |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p' | grep . || echo none
}
echo "  PromQL (cost cookbook, docs/cost.md), from the lab's Prometheus:"
echo "    currency:rota_fleet_spend_per_hour:sum   $(promql 'currency:rota_fleet_spend_per_hour:sum') per hour now"
echo "    currency:rota_fleet_saving:ratio         $(promql 'currency:rota_fleet_saving:ratio') of the all-on cost saved now"
echo "    sum(rota_fleet_node_power_watts{source=\"bmc\"})  $(promql 'sum(rota_fleet_node_power_watts{source="bmc"})') W measured by the BMCs now"
echo "  The books this month so far (bin/rotactl report --prometheus.url=\$PROMETHEUS_URL):"
bin/rotactl report --prometheus.url="$PROMETHEUS_URL" | sed 's/^/    /' || true
