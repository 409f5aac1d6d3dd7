#!/usr/bin/env bash
# Builds the release archives into DIST (default dist/): one
# kubectl-podsync_<version>_<os>_<arch>.tar.gz per platform, each holding the
# plugin, the completion program, LICENSE and README.md, plus a checksums file.
# Archives are reproducible: same source and version, same bytes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
VERSION=${VERSION:-$(git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)}
DIST=${DIST:-$root/dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
module=github.com/kubectl-podsync/kubectl-podsync
ldflags="-s -w -buildid= -X $module/pkg/version.Version=$VERSION"

mkdir -p "$DIST"
rm -f "$DIST"/kubectl-podsync_"$VERSION"_*
for platform in $PLATFORMS; do
  os=${platform%/*} arch=${platform#*/}
  ext=""; [ "$os" = windows ] && ext=.exe
  stage=$(mktemp -d)
  for prog in kubectl-podsync kubectl_complete-podsync; do
    GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" \
      -o "$stage/$prog$ext" "./cmd/$prog"
  done
  cp LICENSE README.md "$stage/"
  archive="$DIST/kubectl-podsync_${VERSION}_${os}_${arch}.tar.gz"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=u=rwX,go=rX -C "$stage" -c \
    "kubectl-podsync$ext" "kubectl_complete-podsync$ext" LICENSE README.md | gzip -n -9 > "$archive"
  rm -rf "$stage"
  echo "dist: $(basename "$archive") $(du -h "$archive" | cut -f1)" >&2
done
(cd "$DIST" && sha256sum kubectl-podsync_"$VERSION"_*.tar.gz > "kubectl-podsync_${VERSION}_checksums.txt")
echo "$DIST"
