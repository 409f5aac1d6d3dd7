#!/usr/bin/env bash
# Builds the pinned control-plane binaries (hack/tools/go.mod) and kwok into a
# cache folder whose name changes with the pins, and prints that folder's bin/.
# A second run with the same pins does nothing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
KWOK_VERSION=v0.8.0
KREW_VERSION=v0.4.3
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$tools/go.mod")

key=$( { cat "$tools/go.mod" "$tools/go.sum"; echo "$KWOK_VERSION $KREW_VERSION"; go version; } | sha256sum | cut -c1-12)
cache=${PODSYNC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-podsync}
bin="$cache/tools-$K8S_VERSION-$key/bin"
mkdir -p "$bin"

log() { echo "build-tools: $*" >&2; }

want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for b in "${want[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done

if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]} ($K8S_VERSION) into $bin; a cold build takes about 10 minutes"
  start=$(date +%s)
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  vpkg=k8s.io/component-base/version
  ldflags="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
  pkgs=()
  for b in "${missing[@]}"; do
    case $b in
      etcd) pkgs+=(go.etcd.io/etcd/server/v3) ;;
      *) pkgs+=("k8s.io/kubernetes/cmd/$b") ;;
    esac
  done
  tmp=$(mktemp -d "$bin/.build.XXXX")
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  # go build names the etcd main package after its path without the /v3.
  if [ -f "$tmp/server" ]; then mv "$tmp/server" "$tmp/etcd"; fi
  mv "$tmp"/* "$bin/" && rmdir "$tmp"
  log "built in $(( $(date +%s) - start ))s"
fi

if [ ! -x "$bin/kwok" ]; then
  log "installing kwok $KWOK_VERSION"
  GOBIN="$bin" CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi

for k in krew validate-krew-manifest; do
  if [ ! -x "$bin/$k" ]; then
    log "installing $k $KREW_VERSION"
    GOBIN="$bin" CGO_ENABLED=0 go install "sigs.k8s.io/krew/cmd/$k@$KREW_VERSION"
  fi
done
# kubectl finds krew as a plugin under this name.
ln -sf krew "$bin/kubectl-krew"

echo "$bin"
