#!/usr/bin/env bash
# A first look at kubectl podsync: builds the plugin and the pinned control
# plane, starts a local cluster in .cluster/ (no Docker: etcd, API server,
# controllers, scheduler and kwok fake nodes on 127.0.0.1), runs
# `kubectl podsync -A` while sample workloads come and go, and leaves the
# cluster running for you to try it yourself.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=.cluster
multi=$root/.clusters

if [ -t 2 ]; then bold=$'\033[1m' off=$'\033[0m'; else bold='' off=''; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$off" >&2; }
# run shows a command and its output, indented, on stderr, so that stdout
# carries only podsync's stream.
run() {
  printf '    $ %s\n' "$*" >&2
  "$@" 2>&1 | sed 's/^/      /' >&2
}

step "Building the plugin into bin/"
mkdir -p bin
go build -o bin/kubectl-podsync ./cmd/kubectl-podsync

step "Building the pinned control-plane binaries (first time: about 10 minutes)"
bin=$(hack/build-tools.sh | tail -n 1)

step "Starting a local cluster in $dir/"
# A cluster left by an earlier run is replaced.
go run ./hack/cluster down --dir "$dir" >/dev/null
go run ./hack/cluster up --dir "$dir" --bin "$bin" >/dev/null
export KUBECONFIG=$root/$dir/kubeconfig
export PATH=$root/bin:$bin:$PATH

step "A Deployment with 3 replicas, before watching: its pods will be SYNC rows"
run kubectl create deployment web --image=nginx:1.27 --replicas=3
run kubectl rollout status deployment/web --timeout=90s

step "Watching every namespace: kubectl podsync -A"
# --timeout bounds the stream in case this script is stopped half-way.
kubectl podsync -A --timeout=3m &
podsync=$!
trap 'kill -TERM "$podsync" 2>/dev/null || true' EXIT
sleep 3

step "Rolling it to a new image"
run kubectl set image deployment/web nginx=nginx:1.28
run kubectl rollout status deployment/web --timeout=90s

step "The Deployment as a target: a CI gate on its rollout (kubectl rollout status, and its pods judged)"
run kubectl podsync deploy/web --until healthy --timeout 90s

step "A Job that completes"
run kubectl create job hello --image=busybox:1.36 -- echo hello
run kubectl wait --for=condition=Complete job/hello --timeout=90s

step "A pod that keeps crashing (simulated by the podsync.test/state annotation)"
run kubectl run crashy --image=busybox:1.36 --restart=Always --annotations=podsync.test/state=crashloop -- false
sleep 12

step "A check on it fails at once and says why: the crashed container's last log lines and its Warning events"
run kubectl podsync crashy --until ready --timeout 60s || true

step "A pod that is deleted again"
run kubectl run doomed --image=busybox:1.36 -- sleep 3600
run kubectl wait --for=condition=Ready pod/doomed --timeout=90s
run kubectl delete pod doomed

# Let the last events arrive, then end the stream (SIGTERM: podsync prints
# its summary first).
sleep 3
kill -TERM "$podsync" 2>/dev/null || true
wait "$podsync" || true
trap - EXIT

step "Three more clusters, one kubeconfig with the contexts podsync-1 to podsync-3"
go run ./hack/cluster down --dir "$multi" >/dev/null
go run ./hack/cluster up --dir "$multi" --clusters 3 --bin "$bin" >/dev/null
for i in 1 2 3; do
  run kubectl --kubeconfig "$multi/kubeconfig" --context "podsync-$i" create deployment web --image=nginx:1.27 --replicas="$i"
done

step "All three in one stream and one gate: kubectl podsync --context 'podsync-*'"
run kubectl podsync --kubeconfig "$multi/kubeconfig" --context 'podsync-*' deploy/web --until healthy --timeout 90s
go run ./hack/cluster down --dir "$multi" >/dev/null

cat >&2 <<EOF

${bold}The cluster keeps running.${off} Point your own shell at it:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$root/bin:$bin:\$PATH
  kubectl podsync -A

Stop it:

  go run ./hack/cluster down --dir $dir
EOF
