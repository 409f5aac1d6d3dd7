// Package profiling lets a user send a profile of a running podsync, as Go
// tools do, behind environment settings that cost nothing when unset:
//
//	PODSYNC_PPROF=localhost:6060      serve net/http/pprof on that address
//	PODSYNC_HEAP_PROFILE=heap.pprof   write a heap profile (after a GC) on exit
//
// The address may end in :0; the address taken is said on stderr either way.
package profiling

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	runtimepprof "runtime/pprof"
	"time"
)

// The environment settings.
const (
	AddressEnv     = "PODSYNC_PPROF"
	HeapProfileEnv = "PODSYNC_HEAP_PROFILE"
)

// Start serves pprof when AddressEnv is set and returns what to call at
// exit: it writes the heap profile when HeapProfileEnv is set. Problems are
// said on errOut and never stop the run: profiling is an aid, not a
// feature the run depends on.
func Start(getenv func(string) string, errOut io.Writer) (stop func()) {
	if addr := getenv(AddressEnv); addr != "" {
		if err := serve(addr, errOut); err != nil {
			fmt.Fprintf(errOut, "podsync: %s: %v\n", AddressEnv, err)
		}
	}
	path := getenv(HeapProfileEnv)
	if path == "" {
		return func() {}
	}
	return func() {
		if err := writeHeap(path); err != nil {
			fmt.Fprintf(errOut, "podsync: %s: %v\n", HeapProfileEnv, err)
		}
	}
}

// serve listens on addr and serves the pprof handlers there, on a mux of
// their own: nothing is added to http.DefaultServeMux.
func serve(addr string, errOut io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(errOut, "podsync: profiling at http://%s/debug/pprof/\n", l.Addr())
	go func() { _ = server.Serve(l) }()
	return nil
}

// writeHeap writes the heap profile of what is live after a collection.
func writeHeap(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create the heap profile: %w", err)
	}
	if err := runtimepprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("write the heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the heap profile: %w", err)
	}
	return nil
}
