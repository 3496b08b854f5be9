#!/usr/bin/env bash
# Installs everything `make test` and `make demo` need on a fresh Debian machine (run as root):
# Debian packages, then pinned Go-built tools into .tools/bin. Tools already built at the pinned
# version are reused, so a second run takes seconds.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
bin="$top/.tools/bin"
mkdir -p "$bin"

# Debian packages: ipmitool/openipmi (IPMI BMC simulator), Slurm (a real cluster on loopback),
# node_exporter (the exporter benchmark's peer), systemd (systemd-analyze verify), Ansible and
# ansible-lint (the rota_exporter role's tests).
apt_pkgs=(ipmitool openipmi slurmctld slurmd slurm-client prometheus-node-exporter curl procps systemd ansible ansible-lint)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "tools: missing Debian packages: ${missing[*]} (run as root: apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
  echo "tools: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Pinned Go tools: name, package, version. Prometheus v0.316.0 is the current release line
# (3.x); Alertmanager v0.28.1 is the newest whose module builds without UI assets (LAB.md).
go_tools=(
  "prometheus github.com/prometheus/prometheus/cmd/prometheus v0.316.0"
  "promtool github.com/prometheus/prometheus/cmd/promtool v0.316.0"
  "alertmanager github.com/prometheus/alertmanager/cmd/alertmanager v0.28.1"
  "amtool github.com/prometheus/alertmanager/cmd/amtool v0.28.1"
  "staticcheck honnef.co/go/tools/cmd/staticcheck v0.8.2"
  "nfpm github.com/goreleaser/nfpm/v2/cmd/nfpm v2.45.2"
)
for entry in "${go_tools[@]}"; do
  read -r name pkg version <<<"$entry"
  stamp="$bin/.$name.version"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    continue
  fi
  echo "tools: go install $pkg@$version"
  GOBIN="$bin" GOFLAGS=-mod=mod go install "$pkg@$version"
  echo "$version" >"$stamp"
done
