#!/usr/bin/env bash
# Builds the release into DIST (default dist/): one
# kubectl-podsync_<version>_<os>_<arch>.tar.gz per platform, each holding the
# plugin, the completion program, LICENSE and README.md; a checksums file; and
# podsync.yaml, the krew manifest rendered from .krew.yaml for these archives.
# Archives are reproducible: same source, version and Go, same bytes.
#
#   hack/dist.sh                                    # all six platforms into dist/
#   PLATFORMS=linux/amd64 DIST=/tmp/d hack/dist.sh  # only some; the manifest lists only those
#
# VERSION defaults to `git describe` (v0.0.0-dev without a tag). The last line
# of stdout is the DIST folder.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
VERSION=${VERSION:-$(git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev)}
DIST=${DIST:-$root/dist}
all="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
partial=-partial
[ -z "${PLATFORMS:-}" ] && partial=
PLATFORMS=${PLATFORMS:-$all}
module=github.com/kubectl-podsync/kubectl-podsync
ldflags="-s -w -buildid= -X $module/pkg/version.Version=$VERSION"

case $VERSION in
  v*) ;;
  *) echo "dist: VERSION $VERSION must start with v (krew requires it)" >&2; exit 2 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$DIST"
rm -f "$DIST"/kubectl-podsync_"$VERSION"_* "$DIST/podsync.yaml"
for platform in $PLATFORMS; do
  os=${platform%/*} arch=${platform#*/}
  ext=""; [ "$os" = windows ] && ext=.exe
  rm -rf "${stage:?}"/*
  GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" \
    -o "$stage/" ./cmd/kubectl-podsync ./cmd/kubectl_complete-podsync
  cp LICENSE README.md "$stage/"
  archive="$DIST/kubectl-podsync_${VERSION}_${os}_${arch}.tar.gz"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=u=rwX,go=rX -C "$stage" -c \
    "kubectl-podsync$ext" "kubectl_complete-podsync$ext" LICENSE README.md | gzip -n -9 > "$archive"
  echo "dist: $(basename "$archive") $(du -h "$archive" | cut -f1)" >&2
done
(cd "$DIST" && sha256sum kubectl-podsync_"$VERSION"_*.tar.gz > "kubectl-podsync_${VERSION}_checksums.txt")
go run ./hack/krew-manifest -dist "$DIST" -version "$VERSION" $partial > "$DIST/podsync.yaml"
# The index's own rules (description lengths, a LICENSE in every archive),
# which validate-krew-manifest does not apply.
go run ./hack/krew-manifest -check -dist "$DIST" "$DIST/podsync.yaml" >&2
echo "dist: podsync.yaml (krew manifest for these archives)" >&2
echo "$DIST"
