#!/usr/bin/env bash
# Builds a Go program at the version a module of its own pins (hack/tools/lint,
# hack/tools/actionlint) into a cache folder whose name changes with that
# module's go.mod, go.sum, the Go version and the link flags, and prints the
# program's path. Only the first run builds; it needs nothing but the Go
# module proxy. hack/lint.sh and hack/actionlint.sh use it.
#
#   hack/pinned-tool.sh MODULE_DIR MODULE_PATH COMMAND_PACKAGE [LDFLAGS]
#   hack/pinned-tool.sh hack/tools/actionlint github.com/rhysd/actionlint \
#     github.com/rhysd/actionlint/cmd/actionlint '-s -w'
#
# Each pin has a module of its own, not hack/tools: build-tools.sh keys the
# Kubernetes build on hack/tools/go.mod and go.sum, and a tool's dependencies
# would both change that key and move the versions that build uses.
set -euo pipefail

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 MODULE_DIR MODULE_PATH COMMAND_PACKAGE [LDFLAGS]" >&2
  exit 2
fi
mod=$(cd "$1" && pwd)
module=$2
pkg=$3
ldflags=${4:-}
name=$(basename "$pkg")
version=$(awk -v p="$module" '$1==p{print $2}' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "pinned-tool: no $module requirement in $mod/go.mod" >&2
  exit 1
fi

key=$( { cat "$mod/go.mod" "$mod/go.sum"; go version; echo "$ldflags"; } | sha256sum | cut -c1-12)
cache=${PODSYNC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-podsync}
bin="$cache/$name-$version-$key/bin"
tool="$bin/$name"

if [ ! -x "$tool" ]; then
  echo "pinned-tool: building $name $version into $bin" >&2
  start=$(date +%s)
  mkdir -p "$bin"
  tmp=$(mktemp -d "$bin/.build.XXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/$name" "$pkg")
  # A rename, so a build cut short never leaves a program behind.
  mv "$tmp/$name" "$tool"
  rm -rf "$tmp"
  trap - EXIT
  echo "pinned-tool: built $name in $(( $(date +%s) - start ))s" >&2
fi
echo "$tool"
