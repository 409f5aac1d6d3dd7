#!/usr/bin/env bash
# Runs actionlint at the version pinned in hack/tools/actionlint/go.mod, built
# once into the cache by hack/pinned-tool.sh, on the workflows in
# .github/workflows (its default), or with the arguments given.
#
# shellcheck and pyflakes are left out even when installed: actionlint would
# run them on the workflows' scripts only where they happen to be on PATH,
# and make vet must judge the same everywhere.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
module=github.com/rhysd/actionlint
version=$(awk -v p="$module" '$1==p{print $2}' "$root/hack/tools/actionlint/go.mod")
ldflags="-s -w -X $module.version=${version#v}"
actionlint=$("$root/hack/pinned-tool.sh" "$root/hack/tools/actionlint" "$module" "$module/cmd/actionlint" "$ldflags")

cd "$root"
exec "$actionlint" -shellcheck= -pyflakes= "$@"
