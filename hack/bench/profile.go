package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/cmd"
)

// profileMain runs `kubectl podsync ARGS` in this process, through
// pkg/cmd.Execute as the plugin's main does, with the CPU and heap
// profilers on, stdout to /dev/null:
//
//	bin/bench profile -kubeconfig K -cpuprofile cpu.out -memprofile mem.out -- -A --once
//	go tool pprof -top cpu.out; go tool pprof -sample_index=alloc_space -top mem.out
func profileMain(ctx context.Context, args []string, stderr io.Writer) (err error) {
	fl := flag.NewFlagSet("profile", flag.ContinueOnError)
	fl.SetOutput(stderr)
	kubeconfig := fl.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	cpuOut := fl.String("cpuprofile", "", "write a CPU profile here")
	memOut := fl.String("memprofile", "", "write a heap profile here (at the end, with alloc_space since the start)")
	memRate := fl.Int("memprofilerate", 0, "runtime.MemProfileRate (0: Go's default, one sample per 512 KiB)")
	timeout := fl.Duration("timeout", 10*time.Minute, "bound for the run")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *kubeconfig == "" {
		return usageError{errors.New("profile: -kubeconfig or $KUBECONFIG is required")}
	}
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}
	if err := os.Setenv("KUBECONFIG", *kubeconfig); err != nil {
		return fmt.Errorf("set KUBECONFIG: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	if *cpuOut != "" {
		stop, perr := startCPUProfile(*cpuOut)
		if perr != nil {
			return perr
		}
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	code := cmd.Execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: devnull, ErrOut: stderr}, fl.Args())
	took := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stderr, "profile: exit %d, wall %s, cpu %s, total allocated %.0f MiB, GC cycles %d, peak RSS of this process %.0f MiB\n",
		code, took.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(ms.TotalAlloc)/(1<<20), ms.NumGC, float64(after.Maxrss)/1024)
	if *memOut != "" {
		f, err := os.Create(*memOut)
		if err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		werr := pprof.Lookup("allocs").WriteTo(f, 0)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	if code != 0 {
		return fmt.Errorf("kubectl podsync %v exited %d", fl.Args(), code)
	}
	return nil
}

// startCPUProfile starts a CPU profile into path. stop ends it and closes
// the file; its error says the profile may not have been written whole.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}
