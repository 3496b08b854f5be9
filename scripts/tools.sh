#!/usr/bin/env bash
# Installs everything `make test` and `make demo` need on a fresh Debian machine (run as root):
# Debian packages, then pinned Go-built tools into .tools/bin. Tools already built at the pinned
# version, tags and flags are reused, so a second run takes seconds. TOOLS_BIN=DIR builds them
# into DIR instead (put it on PATH for the tests: internal/testutil.Tool looks there next).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TOOLS_BIN:-$top/.tools/bin}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)

# Debian packages: gcc and libc6-dev (cgo: go-nvml, the packaged binaries), ipmitool/openipmi
# (IPMI BMC simulator), Slurm (a real cluster on loopback), node_exporter (the exporter
# benchmark's peer), systemd (systemd-analyze verify), Ansible, ansible-lint and python3-passlib
# (the rota_exporter role's tests: Ansible's bcrypt hashing needs passlib on the controller),
# lintian and dpkg-dev (dpkg-shlibdeps) for the .deb packages. Go, make and git must be there
# before this script runs. internal/testutil.TestToolsInstallsWhatTestsNeed checks that every
# program a test runs is in this list (or a dependency) or built below.
apt_pkgs=(gcc libc6-dev ipmitool openipmi slurmctld slurmd slurm-client prometheus-node-exporter curl procps systemd ansible ansible-lint python3-passlib lintian dpkg-dev)
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

# Pinned Go tools, one `go install` per module: the tools of one module build together and share
# the work. Each line: the binaries, the version, the build tags (- for none), the packages.
# Prometheus v0.316.0 is the current release line (3.x); remove_all_sd drops the cloud service
# discoveries (Kubernetes, AWS, Azure, GCE, ...: most of its build) and keeps file and http
# discovery, all the project's configs use. Alertmanager v0.28.1 is the newest whose module builds
# without UI assets (LAB.md). Every tool is linked without symbol table and DWARF (-s -w: a
# shorter link, smaller binaries). The stamp beside each binary holds version, tags and flags, so
# a change to any of them rebuilds.
ldflags="-s -w"
go_builds=(
  "prometheus,promtool v0.316.0 remove_all_sd github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool"
  "alertmanager,amtool v0.28.1 - github.com/prometheus/alertmanager/cmd/alertmanager github.com/prometheus/alertmanager/cmd/amtool"
  "staticcheck v0.8.2 - honnef.co/go/tools/cmd/staticcheck"
  "nfpm v2.45.2 - github.com/goreleaser/nfpm/v2/cmd/nfpm"
)
for entry in "${go_builds[@]}"; do
  read -r names version tags pkgs <<<"$entry"
  [ "$tags" = - ] && tags=""
  stamp="$version tags=$tags ldflags=$ldflags"
  IFS=, read -ra tools <<<"$names"
  fresh=true
  for name in "${tools[@]}"; do
    { [ -x "$bin/$name" ] && [ "$(cat "$bin/.$name.version" 2>/dev/null)" = "$stamp" ]; } || fresh=false
  done
  $fresh && continue
  args=()
  for pkg in $pkgs; do args+=("$pkg@$version"); done
  echo "tools: go install -tags=$tags -ldflags='$ldflags' ${args[*]}"
  GOBIN="$bin" GOFLAGS=-mod=mod go install -tags="$tags" -ldflags="$ldflags" "${args[@]}"
  for name in "${tools[@]}"; do echo "$stamp" >"$bin/.$name.version"; done
done

# Go tools built from this module's own go.mod (its `tool` lines): their version is go.mod's, and
# the replace directives of their go.mod, which `go install pkg@version` refuses, do not apply.
# etcd is the server the HA tests run (go.etcd.io/etcd/server/v3, the etcd line of the client
# rota links). Each line: the binary, the package.
mod_builds=(
  "etcd go.etcd.io/etcd/server/v3"
)
for entry in "${mod_builds[@]}"; do
  read -r name pkg <<<"$entry"
  version=$(cd "$top" && go list -f '{{.Module.Version}}' "$pkg")
  stamp="$version ldflags=$ldflags"
  { [ -x "$bin/$name" ] && [ "$(cat "$bin/.$name.version" 2>/dev/null)" = "$stamp" ]; } && continue
  echo "tools: go build -ldflags='$ldflags' -o $bin/$name $pkg@$version (go.mod)"
  (cd "$top" && go build -ldflags="$ldflags" -o "$bin/$name" "$pkg")
  echo "$stamp" >"$bin/.$name.version"
done

# A Kubernetes control plane for the kubernetes adapter's tests and the lab (internal/kubelab):
# kube-apiserver, kube-scheduler and kube-controller-manager from k8s.io/kubernetes, with the
# etcd above (the etcd line Kubernetes v1.37 builds with). go install refuses k8s.io/kubernetes
# (its go.mod replaces 33 k8s.io modules with ./staging folders the module zip lacks), so it is
# built in its module-cache folder with -modfile: a copy of its go.mod that requires the
# published modules of the same release instead (only go.mod and go.sum are copied, not the
# 120 MB tree). The three programs come from one go build: one module graph, every package they
# share (the apiserver libraries, etcd's client, gRPC, protobuf) compiled once. Only these
# commands are built; providerless drops the in-tree cloud providers; cgo is off (static
# binaries, as Kubernetes releases them); -trimpath and -s -w as above. Kubernetes reads its
# own version from -X flags.
k8s_version=v1.37.2
k8s_staging=v0.37.2
k8s_tools=(kube-apiserver kube-scheduler kube-controller-manager)
k8s_ldflags="$ldflags -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
k8s_stamp="$k8s_version staging=$k8s_staging tags=providerless cgo=0 trimpath ldflags=$k8s_ldflags"
fresh=true
for name in "${k8s_tools[@]}"; do
  { [ -x "$bin/$name" ] && [ "$(cat "$bin/.$name.version" 2>/dev/null)" = "$k8s_stamp" ]; } || fresh=false
done
if ! $fresh; then
  echo "tools: building ${k8s_tools[*]} from k8s.io/kubernetes@$k8s_version (several minutes)"
  src=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "tools: k8s.io/kubernetes@$k8s_version did not download" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp "$src/go.mod" "$src/go.sum" "$work/" && chmod u+w "$work/go.mod" "$work/go.sum"
  edits=()
  for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$work/go.mod"); do
    edits+=("-dropreplace=$m" "-require=$m@$k8s_staging")
  done
  go mod edit "${edits[@]}" "$work/go.mod"
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -modfile="$work/go.mod" -trimpath \
    -tags=providerless -ldflags="$k8s_ldflags" -o "$work/" \
    ./cmd/kube-apiserver ./cmd/kube-scheduler ./cmd/kube-controller-manager)
  for name in "${k8s_tools[@]}"; do
    mv "$work/$name" "$bin/$name"
    echo "$k8s_stamp" >"$bin/.$name.version"
  done
fi
