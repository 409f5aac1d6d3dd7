#!/usr/bin/env bash
# Runs golangci-lint at the version pinned in hack/tools/lint/go.mod, built
# once into the cache by hack/pinned-tool.sh, from the repository root: with
# no arguments `run ./...` there and in hack/bench (a module of its own), else
# golangci-lint with the arguments given (e.g. `version`,
# `run --fix ./pkg/check/...`). The first run builds it (a few minutes on two
# cores).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pkg=github.com/golangci/golangci-lint/v2
version=$(awk -v p="$pkg" '$1==p{print $2}' "$root/hack/tools/lint/go.mod")
# Without goreleaser's stamp the binary would call itself "(devel)"; the date
# being set makes it keep this version instead of reading build info.
ldflags="-s -w -X main.version=${version#v} -X main.date=pinned"
lint=$("$root/hack/pinned-tool.sh" "$root/hack/tools/lint" "$pkg" "$pkg/cmd/golangci-lint" "$ldflags")

cd "$root"
if [ $# -eq 0 ]; then
  # The bench is a module of its own: ./... at the root does not reach it.
  "$lint" run ./...
  cd "$root/hack/bench"
  exec "$lint" run ./...
fi
exec "$lint" "$@"
