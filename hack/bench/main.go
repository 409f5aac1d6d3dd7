// Command bench measures kubectl podsync against kubectl and against the
// least work a client can do, on a local control plane loaded with many
// realistic pods, and measures change lag under churn. See
// docs/BENCHMARKS.md for the results and how to read them.
//
//	go run ./hack/bench [-pods 5000,50000,150000] [-runs 5] [-rate 1000,250] [-duration 60s] [-update put|patch]
//	go run ./hack/bench -churn-peers floor          # under churn, podsync beside the floor's watch only (default: kubectl,floor)
//	go run ./hack/bench -pods 150000 -mem-budget 16000     # a command that would not fit is skipped, and said so
//	go run ./hack/bench -clusters 3 -cluster-pods 10000    # also podsync over three contexts against kubectl on each
//	go run ./hack/bench -attach DIR -plugin OLD/kubectl-podsync -only podsync,podsync-json   # an older build, same cluster
//	go run ./hack/bench -smoke                      # small run for make test: exits 1 if anything is lost
//	go run ./hack/bench/floor -kubeconfig FILE [-page N | -watchlist | -watch]   # one floor variant
//	go run ./hack/bench profile -kubeconfig FILE -cpuprofile cpu.out -memprofile mem.out -- -A --once
//
// The tools folder comes from -bin or $PODSYNC_TOOLS_BIN (hack/build-tools.sh
// prints it). Each measured client runs under hack/bench/spawn, which
// reports its wall time, CPU time, peak RSS and when its first row arrived.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit code: 0 done, 1 failed (or something was lost), 2
// bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(args) > 0 && args[0] == "profile":
		err = profileMain(ctx, args[1:], stderr)
	default:
		err = benchMain(ctx, args, stdout, stderr)
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "bench: %v\n", err)
	return 1
}

type usageError struct{ error }
