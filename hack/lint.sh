#!/usr/bin/env bash
# Builds golangci-lint at the version pinned in hack/tools/lint/go.mod into a
# cache folder whose name changes with that module's go.mod, go.sum and the Go
# version, then runs it from the repository root: with no arguments `run ./...`
# there and in hack/bench (a module of its own), else golangci-lint with the
# arguments given (e.g. `version`,
# `run --fix ./pkg/check/...`). Only the first run builds (a few minutes on two
# cores); it needs nothing but the Go module proxy.
#
# The pin has a module of its own, not hack/tools: build-tools.sh keys the
# Kubernetes build on hack/tools/go.mod and go.sum, and golangci-lint's
# dependencies would both change that key and move the versions that build uses.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/hack/tools/lint"
pkg=github.com/golangci/golangci-lint/v2
version=$(awk -v p="$pkg" '$1==p{print $2}' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "lint: no $pkg requirement in $mod/go.mod" >&2
  exit 1
fi

# Without goreleaser's stamp the binary would call itself "(devel)"; the date
# being set makes it keep this version instead of reading build info.
ldflags="-s -w -X main.version=${version#v} -X main.date=pinned"
key=$( { cat "$mod/go.mod" "$mod/go.sum"; go version; echo "$ldflags"; } | sha256sum | cut -c1-12)
cache=${PODSYNC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-podsync}
bin="$cache/golangci-lint-$version-$key/bin"
lint="$bin/golangci-lint"

if [ ! -x "$lint" ]; then
  echo "lint: building golangci-lint $version into $bin" >&2
  start=$(date +%s)
  mkdir -p "$bin"
  tmp=$(mktemp -d "$bin/.build.XXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/golangci-lint" "$pkg/cmd/golangci-lint")
  # A rename, so a build cut short never leaves a binary behind.
  mv "$tmp/golangci-lint" "$lint"
  rm -rf "$tmp"
  trap - EXIT
  echo "lint: built in $(( $(date +%s) - start ))s" >&2
fi

cd "$root"
if [ $# -eq 0 ]; then
  # The bench is a module of its own: ./... at the root does not reach it.
  "$lint" run ./...
  cd "$root/hack/bench"
  exec "$lint" run ./...
fi
exec "$lint" "$@"
