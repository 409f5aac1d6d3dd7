package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
)

// apiMemory is what the API server took to serve one run of a client.
type apiMemory struct {
	cmd        command
	run        int
	idle, peak int64 // bytes: resident set before the client, peak while it ran
}

func (a apiMemory) addedMiB() float64 { return float64(a.peak-a.idle) / (1 << 20) }

// servesAPIMemory says whether a command's cost to the API server is
// measured: the targets compare podsync's with kubectl's; podsync's table
// lists, its -o json streams the list where the server can. The floor of
// the size (its fastest plain client) is measured beside them, to show
// what reading every pod that fast costs the server whoever reads them.
func servesAPIMemory(c command, floor *cmdResult) bool {
	return c.id == "kubectl" || baseID(c.id) == "podsync" || baseID(c.id) == "podsync-json" ||
		(floor != nil && c.id == floor.cmd.id)
}

// measureAPIServerMemory runs podsync, kubectl and the floor of the size
// -apiserver-memory-runs more times each, alternating, every run on a
// freshly restarted API server. In the rounds the API server keeps the
// heap an earlier client made it grow and serves the next from it, so what
// a client adds there depends on what ran before; after a restart every
// client finds the same API server: its watch cache filled, nothing else
// held. One run each says little: where the server's collector stands
// when a client starts moves what it adds by tens of MiB at 50,000 pods.
func (e *env) measureAPIServerMemory(ctx context.Context, cs kubernetes.Interface, res *sizeResult) error {
	floor := res.bestFloor()
	for run := 1; run <= e.cfg.apiMemRuns; run++ {
		for _, c := range res.commands {
			if !c.measured() || !servesAPIMemory(c.cmd, floor) {
				continue
			}
			if err := e.freshAPIServer(ctx, cs, res.pods); err != nil {
				return err
			}
			s, err := e.measureOnce(ctx, c.cmd, res.pods)
			if err != nil {
				return err
			}
			if s.apiPeak < 0 {
				return nil // no /proc here: nothing to report
			}
			a := apiMemory{cmd: c.cmd, run: run, idle: s.apiIdle, peak: s.apiPeak}
			res.apiMemory = append(res.apiMemory, a)
			e.logf("  %d pods: kube-apiserver freshly restarted, %s (run %d): idle %s, peak %s, +%.0f MiB",
				res.pods, c.cmd.id, run, mib(a.idle), mib(a.peak), a.addedMiB())
		}
	}
	return nil
}

// freshAPIServer restarts the API server and waits until it serves pods
// from its watch cache and its resident set has settled.
func (e *env) freshAPIServer(ctx context.Context, cs kubernetes.Interface, pods int) error {
	t := time.Now()
	// Killed, not stopped: a graceful stop waits for the open watches.
	if err := e.cluster.Kill(localcluster.APIServer); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	if err := e.cluster.Restart(localcluster.APIServer); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	restarted := time.Since(t)
	defer func() {
		e.logf("  kube-apiserver restarted in %s, serving from its cache and settled %s later", restarted.Round(100*time.Millisecond), (time.Since(t) - restarted).Round(100*time.Millisecond))
	}()
	pid := e.cluster.PIDs()[localcluster.APIServer]
	e.apiMeter = newPeakMeter(pid)
	limit := 2*time.Minute + time.Duration(pods)*time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// resourceVersion 0 is served from the watch cache only, once filled.
	for {
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver did not serve pods from its cache within %s of a restart: %w", limit, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return settle(ctx, pid)
}

// settle waits until a process's resident set moved less than 2 MiB in
// the last second, or 20 s passed: a restarted API server is still busy
// with its start for a few seconds after it answers.
func settle(ctx context.Context, pid int) error {
	const step = 250 * time.Millisecond
	var last []int64
	for range int(20 * time.Second / step) {
		rss, err := procRSS(pid)
		if err != nil {
			return nil // no /proc: nothing to wait for
		}
		last = append(last, rss)
		if n := len(last); n > 4 && abs(last[n-1]-last[n-5]) < 2<<20 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
	}
	return nil
}

func abs(n int64) int64 { return max(n, -n) }
