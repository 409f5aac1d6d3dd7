//go:build unix

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// startTimeout bounds Start when ctx has no earlier deadline. A warm start
// takes seconds; a minute-plus means something is wrong.
const startTimeout = 2 * time.Minute

// Address ranges, chosen not to overlap: services, and one /16 of pod IPs
// per node (room for 50,000 pods on a single node).
const (
	serviceCIDR = "10.96.0.0/16"
	maxNodes    = 100
)

func podCIDR(i int) string  { return fmt.Sprintf("10.%d.0.0/16", 128+i) }
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// ports are the loopback ports of one cluster, all picked free at start.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler, kwok int
}

// Start creates a cluster in o.Dir and waits until it is ready: the API
// server's /readyz passes, every node is Ready, the default ServiceAccount
// exists and a smoke-test Deployment's pod became Ready (and was deleted
// again). On failure it stops what it started and the error names the
// component, with the last lines of its log.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Dir:        o.Dir,
		Kubeconfig: filepath.Join(o.Dir, "kubeconfig"),
		detach:     o.Detach,
		log:        o.Log,
	}
	if err := refuseRunning(o.Dir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	began := time.Now()
	if err := c.boot(ctx, o); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("start local cluster in %s: %w", o.Dir, err)
	}
	if !o.NoCrashLogs && !o.Detach {
		c.startKeeper()
	}
	c.logf("ready in %s; export KUBECONFIG=%s", time.Since(began).Round(100*time.Millisecond), c.Kubeconfig)
	return c, nil
}

// startKeeper runs KeepCrashLogs in this process until Stop.
func (c *Cluster) startKeeper() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.KeepCrashLogs(ctx); err != nil {
			c.logf("%v", err)
		}
	}()
	c.stopKeeper = func() { cancel(); <-done }
}

func (o Options) normalize() (Options, error) {
	if o.Dir == "" || o.BinDir == "" {
		return o, errors.New("localcluster: Options.Dir and Options.BinDir are required")
	}
	var err error
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return o, fmt.Errorf("localcluster: %w", err)
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("localcluster: %w", err)
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 0 || o.Nodes > maxNodes {
		return o, fmt.Errorf("localcluster: Nodes must be between 1 and %d, not %d", maxNodes, o.Nodes)
	}
	if o.PodStages == "" {
		o.PodStages = "general"
	}
	if _, ok := kwokPodStages[o.PodStages]; !ok {
		return o, fmt.Errorf("localcluster: PodStages must be general or fast, not %q", o.PodStages)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, b := range []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return o, fmt.Errorf("localcluster: binary %s missing in %s (run hack/build-tools.sh): %w", b, o.BinDir, err)
		}
	}
	return o, nil
}

// refuseRunning keeps Start from wiping the folder of a live cluster.
func refuseRunning(dir string) error {
	old, err := Attach(dir)
	if err != nil {
		return nil // no state: nothing runs there
	}
	if pids := old.PIDs(); len(pids) > 0 {
		return fmt.Errorf("localcluster: a cluster is already running in %s (processes %v); stop it first", dir, pids)
	}
	return nil
}

// step is one phase of the boot, logged with its duration.
type step struct {
	name string
	run  func(context.Context) error
}

func (c *Cluster) boot(ctx context.Context, o Options) error {
	p, err := c.prepare(o)
	if err != nil {
		return err
	}
	steps := []step{
		{"etcd", func(ctx context.Context) error { return c.launch(ctx, p.comps[Etcd]) }},
		{"kube-apiserver", func(ctx context.Context) error { return c.launch(ctx, p.comps[APIServer]) }},
		{"kwok CRDs, test roles", func(ctx context.Context) error {
			if err := c.installKwokCRDs(ctx, p.kwokModule); err != nil {
				return err
			}
			return c.createTestRoles(ctx)
		}},
		{"controllers, scheduler, kwok", func(ctx context.Context) error {
			return c.launch(ctx, p.comps[ControllerManager], p.comps[Scheduler], p.comps[Kwok])
		}},
		{fmt.Sprintf("%d nodes", o.Nodes), func(ctx context.Context) error { return c.createNodes(ctx, o.Nodes) }},
		{"default service account", c.waitDefaultServiceAccount},
		{"smoke-test deployment", c.smokeTest},
	}
	if keeper := p.comps[CrashLogs]; keeper != nil {
		steps = append(steps, step{"crash-log keeper", func(ctx context.Context) error { return c.launch(ctx, keeper) }})
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.run(ctx); err != nil {
			return err
		}
		c.logf("%s ready (%s)", s.name, time.Since(t).Round(10*time.Millisecond))
	}
	return nil
}

// launch starts components together and waits until all are healthy.
func (c *Cluster) launch(ctx context.Context, comps ...*component) error {
	c.mu.Lock()
	for _, p := range comps {
		if err := p.start(c.Dir, c.detach); err != nil {
			c.mu.Unlock()
			return err
		}
		c.components = append(c.components, p)
	}
	err := c.saveState()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	for _, p := range comps {
		if err := c.waitHealthy(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// resetDir removes what an earlier cluster left in dir; other files stay.
func resetDir(dir string) error {
	for _, name := range []string{"pki", "etcd", "logs", "podlogs", "config", "kubeconfig", stateFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("reset %s: %w", dir, err)
		}
	}
	for _, sub := range []string{"logs", "config", "pki", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", sub, err)
		}
	}
	return nil
}

func pickPorts() (ports, error) {
	p, err := freePorts(6)
	if err != nil {
		return ports{}, err
	}
	return ports{etcdClient: p[0], etcdPeer: p[1], apiServer: p[2], controllerManager: p[3], scheduler: p[4], kwok: p[5]}, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func loopback(scheme string, port int, path string) string {
	return scheme + "://" + hostPort(port) + path
}
