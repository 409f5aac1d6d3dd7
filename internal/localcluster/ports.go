//go:build unix

package localcluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are picked below the kernel's ephemeral range. A port from
// "127.0.0.1:0" lies inside that range and is free only until its listener
// closes; in the seconds before a component binds it, the kernel may give
// it to any outgoing connection as its local port, and with clusters
// starting side by side there are hundreds of those (CI saw
// kube-controller-manager fail with "bind: address already in use").
// Below the range the kernel hands out nothing by itself, so only an
// explicit bind can take a port, and this process never picks one twice.
const lowestPort = 10000

var picked = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePorts returns n distinct loopback ports that were free when picked.
func freePorts(n int) ([]int, error) {
	top, err := ephemeralStart()
	if err != nil || top-lowestPort < 1000 {
		return kernelPorts(n)
	}
	picked.Lock()
	defer picked.Unlock()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("pick a free port: none free of 1000 tried in %d-%d", lowestPort, top-1)
		}
		p := lowestPort + rand.IntN(top-lowestPort)
		if picked.ports[p] || !bindable(p) {
			continue
		}
		picked.ports[p] = true
		out = append(out, p)
	}
	return out, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, fmt.Errorf("read the ephemeral port range: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, errors.New("read the ephemeral port range: not two numbers")
	}
	first, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, fmt.Errorf("read the ephemeral port range: %w", err)
	}
	return first, nil
}

func bindable(port int) bool {
	l, err := net.Listen("tcp", hostPort(port))
	if err != nil {
		return false
	}
	return l.Close() == nil
}

// kernelPorts lets the kernel choose, where its range is unknown. All
// listeners stay open until the last is picked so no port comes twice.
func kernelPorts(n int) ([]int, error) {
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
