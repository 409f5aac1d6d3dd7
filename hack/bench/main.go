// Command bench measures kubectl podsync against kubectl and against the
// least work a client can do, on a local control plane loaded with many
// realistic pods, and measures change lag under churn. See
// docs/BENCHMARKS.md for the results and how to read them.
//
// It is a module of its own; build it there and run it from the repository
// root, where it builds the plugin (make bench does both):
//
//	(cd hack/bench && go build -o ../../bin/bench .)
//	bin/bench [-pods 5000,50000,150000] [-runs 5] [-rate 1000,250] [-duration 60s] [-update put|patch] [-out FILE]
//	bin/bench -churn-peers floor          # under churn, podsync beside the floor's watch only (default: kubectl,floor)
//	bin/bench -pods 150000 -mem-budget 16000     # a command that would not fit is skipped, and said so
//	bin/bench -clusters 3 -cluster-pods 10000    # also podsync over three contexts against kubectl on each
//	bin/bench -attach DIR -plugin OLD/kubectl-podsync -only podsync,podsync-json   # an older build, same cluster
//	bin/bench -crs-only                   # only the custom resources: podsync -f on 1,000 Ready objects of one kind, kubectl wait --all
//	bin/bench -smoke                      # small run for make test: exits 1 if anything is lost
//	(cd hack/bench && go run ./floor -kubeconfig FILE [-page N | -watchlist | -watch])   # one floor variant
//	bin/bench profile -kubeconfig FILE -cpuprofile cpu.out -memprofile mem.out -- -A --once
//
// The report goes to stdout, and with -out to the file named there; nothing
// is written into the repository's tracked files. The tools folder comes
// from -bin or $PODSYNC_TOOLS_BIN (hack/build-tools.sh prints it). Each
// measured client runs under hack/bench/spawn, which reports its wall time,
// CPU time, peak RSS and when its first row arrived.
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
