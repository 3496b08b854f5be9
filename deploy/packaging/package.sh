#!/usr/bin/env bash
# Builds the rota-exporter and rota .deb packages with nfpm (deploy/nfpm/*.yaml): the packaged
# binaries (built here, with release flags), their man pages, copyright and changelog, and the
# maintainer scripts. lintian finds no error in them (deploy.TestPackagesLintian). Environment:
#   DIST          where the .debs go (default: dist)
#   NFPM          the nfpm binary (default: .tools/bin/nfpm, then $PATH)
#   VERSION       the upstream version (default: from git describe, see below)
#   DEB_REVISION  the Debian revision (default: 1): packages are <name>_<VERSION>-<DEB_REVISION>
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
DIST=${DIST:-dist}
NFPM=${NFPM:-$(command -v .tools/bin/nfpm || command -v nfpm)}

# A Debian version starts with a digit: tag v1.2.3 gives 1.2.3; 4 commits past it,
# 1.2.3+git4.gabcdef0 (sorts after 1.2.3); no tag at all, 0.0.0+git.gabcdef0.
if [ -z "${VERSION:-}" ]; then
	if desc=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		VERSION=$(echo "$desc" | sed -E 's/^v//; s/-([0-9]+)-g([0-9a-f]+)$/+git\1.g\2/')
	else
		VERSION="0.0.0+git.g$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	fi
fi
export VERSION
export DEB_REVISION=${DEB_REVISION:-1}
export ARCH=${ARCH:-$(go env GOARCH)}
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The changelog's date: the commit's, so that a rebuild of one commit gives the same file.
date=$(date -R -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")

STAGE=$(mktemp -d)
export STAGE BIN_DIR="$STAGE/bin"
trap 'rm -rf "$STAGE"' EXIT

# The packaged binaries: position independent (-buildmode=pie, for ASLR), stripped of symbols
# and DWARF (-s -w), without the build machine's paths (-trimpath), with their version. go-nvml's
# header marks functions rota never calls deprecated: those warnings are silenced.
vpkg=github.com/prometheus/common/version
CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations" go build -buildmode=pie -trimpath -o "$BIN_DIR/" \
	-ldflags "-s -w -X $vpkg.Version=$VERSION -X $vpkg.Revision=$commit -X $vpkg.Branch=HEAD" \
	./cmd/rota ./cmd/rotactl ./cmd/rota-exporter

# The binaries use cgo (libc: NVML's loader, user and DNS lookups): dpkg-shlibdeps names the
# libc6 version their symbols need. It wants a debian/control to read, however small.
mkdir -p "$STAGE/debian"
printf 'Source: rota\n\nPackage: rota\nArchitecture: any\n' >"$STAGE/debian/control"
LIBC_DEPENDS=$(cd "$STAGE" && dpkg-shlibdeps -O -e bin/rota -e bin/rotactl -e bin/rota-exporter 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
case "$LIBC_DEPENDS" in
libc6*) export LIBC_DEPENDS ;;
*) echo "package.sh: dpkg-shlibdeps gave no libc6 dependency (got: '$LIBC_DEPENDS')" >&2; exit 1 ;;
esac

# Man pages from kingpin's --help-man. Its header puts the whole multi-line version banner on
# the .TH line and its NAME section lacks the summary man(7) asks for: both are rewritten.
man_page() { # binary summary
	"$BIN_DIR/$1" --help-man | awk -v name="$1" -v summary="$2" -v version="$VERSION" -v day="${date:5:11}" '
		NR == 1 { printf ".TH %s 1 \"%s\" \"rota %s\" \"User Commands\"\n", toupper(name), day, version; head = 1; next }
		head && /^\.SH "NAME"$/ { head = 0; print; getline; printf "%s \\- %s\n", name, summary; next }
		head { next }
		{ print }' | gzip -9n >"$STAGE/$1.1.gz"
}
man_page rota "the rota scaler daemon: powers bare-metal servers on and off from Prometheus signals"
man_page rotactl "the rota operator's command line: status, plans, pins, power, rules, simulation"
man_page rota-exporter "CPU, memory and GPU (NVML) metrics for Prometheus and the rota scaler"

# One Debian changelog entry per build, naming the commit it was built from.
for pkg in rota rota-exporter; do
	printf '%s (%s-%s) unstable; urgency=medium\n\n  * Built from commit %.12s of https://github.com/rotahq/rota.\n\n -- rota maintainers <rota@rotahq.invalid>  %s\n' \
		"$pkg" "$VERSION" "$DEB_REVISION" "$commit" "$date" | gzip -9n >"$STAGE/$pkg.changelog.Debian.gz"
done

# The exporter's unit is deploy/systemd/rota-exporter.service, written for a binary in
# /usr/local/bin (a manual install); the package puts it in /usr/bin.
sed 's#/usr/local/bin/rota-exporter#/usr/bin/rota-exporter#' deploy/systemd/rota-exporter.service >"$STAGE/rota-exporter.service"
# The postinst is shared; the block that creates rota's user and folders is rota's alone.
sed '/^# rota only: begin/,/^# rota only: end/d' deploy/packaging/postinst >"$STAGE/rota-exporter.postinst"

# nfpm expands the environment in contents and depends but not in script paths: ${STAGE} is
# put in here, in a copy of the config (paths stay relative to the repository root).
mkdir -p "$DIST"
for pkg in rota-exporter rota; do
	sed "s#\${STAGE}#$STAGE#g" "deploy/nfpm/$pkg.yaml" >"$STAGE/$pkg.yaml"
	"$NFPM" package --packager deb --config "$STAGE/$pkg.yaml" --target "$DIST/${pkg}_${VERSION}-${DEB_REVISION}_${ARCH}.deb"
done
