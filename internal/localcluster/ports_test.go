//go:build unix

package localcluster

import (
	"net"
	"sync"
	"testing"
)

// Ports inside the ephemeral range can be taken by any outgoing
// connection between being picked and being bound; these must lie below
// it, never repeat within the process, and be bindable.
func TestFreePortsBelowEphemeralRange(t *testing.T) {
	top, err := ephemeralStart()
	if err != nil || top-lowestPort < 1000 {
		t.Skipf("no usable room below the ephemeral range (%d, %v)", top, err)
	}
	var (
		mu   sync.Mutex
		seen = map[int]bool{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			ports, err := freePorts(6)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ports {
				if p < lowestPort || p >= top {
					t.Errorf("port %d is outside %d-%d", p, lowestPort, top-1)
				}
				if seen[p] {
					t.Errorf("port %d picked twice", p)
				}
				seen[p] = true
			}
		})
	}
	wg.Wait()
	if len(seen) != 48 {
		t.Fatalf("got %d distinct ports, want 48", len(seen))
	}
	for p := range seen {
		l, err := net.Listen("tcp", hostPort(p))
		if err != nil {
			t.Errorf("picked port %d cannot be bound: %v", p, err)
			continue
		}
		_ = l.Close()
	}
}

// A port some other listener holds is never picked.
func TestFreePortsSkipsBoundPorts(t *testing.T) {
	top, err := ephemeralStart()
	if err != nil || top-lowestPort < 1000 {
		t.Skipf("no usable room below the ephemeral range (%d, %v)", top, err)
	}
	held := map[int]bool{}
	for p := lowestPort; p < lowestPort+200; p++ {
		l, err := net.Listen("tcp", hostPort(p))
		if err != nil {
			continue
		}
		defer l.Close()
		held[p] = true
	}
	picked.Lock()
	saved := picked.ports
	picked.ports = map[int]bool{}
	for p := lowestPort + 200; p < top; p++ {
		picked.ports[p] = true // leave only the held ones to choose from
	}
	picked.Unlock()
	defer func() { picked.Lock(); picked.ports = saved; picked.Unlock() }()
	if ports, err := freePorts(1); err == nil {
		t.Fatalf("picked %v although every candidate port is held", ports)
	}
}
