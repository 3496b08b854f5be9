#!/usr/bin/env bash
# Builds the rota-exporter and rota .deb packages with nfpm (deploy/nfpm/*.yaml) from binaries
# already built (`make package` builds them first). Environment:
#   BIN_DIR  the binaries (default: bin)      DIST   where the .debs go (default: dist)
#   NFPM     the nfpm binary (default: .tools/bin/nfpm, then $PATH)
#   VERSION  the package version (default: from git describe, see below)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export BIN_DIR=${BIN_DIR:-bin}
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
export ARCH=${ARCH:-$(go env GOARCH)}

# The exporter's unit is deploy/systemd/rota-exporter.service, written for a binary in
# /usr/local/bin (a manual install); the package puts it in /usr/bin.
STAGE=$(mktemp -d)
export STAGE
trap 'rm -rf "$STAGE"' EXIT
sed 's#/usr/local/bin/rota-exporter#/usr/bin/rota-exporter#' deploy/systemd/rota-exporter.service >"$STAGE/rota-exporter.service"

mkdir -p "$DIST"
for pkg in rota-exporter rota; do
	"$NFPM" package --packager deb --config "deploy/nfpm/$pkg.yaml" --target "$DIST/${pkg}_${VERSION}_${ARCH}.deb"
done
