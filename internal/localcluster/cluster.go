//go:build unix

// Package localcluster runs a real Kubernetes control plane on loopback for
// tests and the demo: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler from pinned binaries, with kwok standing in for kubelets on
// fake nodes. No containers run; pods get their status from kwok stages,
// including our own stages for broken workloads (see StateAnnotation).
package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Component names, for Kill, Restart and PIDs.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// Options configures Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok (hack/build-tools.sh prints it).
	BinDir string
	// Dir is the cluster's working folder: certificates, etcd data, logs,
	// kubeconfig and the state file. Start resets what it keeps there.
	Dir string
	// Nodes is the number of fake nodes (default 3, at most 100).
	Nodes int
	// APIServerArgs are extra kube-apiserver flags; a flag given here
	// overrides the default one.
	APIServerArgs []string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// PodStages picks kwok's shipped pod lifecycle: "general" (default: each
	// step takes 1-5 s, as on a busy node, so transitions are visible) or
	// "fast" (every step at once, for large pod counts).
	PodStages string
	// Detach lets the processes outlive this process (hack/cluster up).
	// Otherwise the kernel kills them when this process dies.
	Detach bool
	// NoCrashLogs turns off the logs of crash-looping pods. By default
	// every pod in StateCrashLoop gets CrashLoopLog (see KeepCrashLogs),
	// kept by a goroutine of this process until Stop, or with Detach by
	// the process CrashLogsCommand describes. The keeper watches the
	// metadata of all pods, which a benchmark may not want.
	NoCrashLogs bool
	// CrashLogsCommand is the program and arguments of a process that
	// runs KeepCrashLogs on the cluster folder, which is appended as the
	// last argument, until SIGTERM. It runs as component CrashLogs, and
	// only with Detach, where no goroutine of this process could keep the
	// logs; without it a detached cluster has no crash logs.
	// hack/cluster passes a copy of itself.
	CrashLogsCommand []string
}

// Cluster is a running local control plane.
type Cluster struct {
	// Dir is the working folder given in Options.
	Dir string
	// Kubeconfig is the admin kubeconfig, with contexts AdminContext
	// (current), RestrictedContext, NoPodLogsContext and NoEventsContext.
	Kubeconfig string
	// Server is the API server's URL, https://127.0.0.1:PORT.
	Server string

	detach bool
	log    io.Writer

	mu         sync.Mutex
	components []*component

	// stopKeeper ends the KeepCrashLogs goroutine and waits for it; nil
	// when none runs.
	stopKeeper func()
}

// state is what Attach needs to find the processes of a cluster again.
type state struct {
	Server     string       `json:"server"`
	Kubeconfig string       `json:"kubeconfig"`
	Components []*component `json:"components"`
}

const stateFile = "state.json"

// Attach opens the cluster that Start left running in dir, typically from
// another process. Its processes are found through dir's state file.
func Attach(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("attach to cluster in %s: %w", dir, err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("attach to cluster in %s: parse state: %w", dir, err)
	}
	return &Cluster{
		Dir:        dir,
		Kubeconfig: st.Kubeconfig,
		Server:     st.Server,
		// Attached clusters were started detached; keep restarts that way.
		detach:     true,
		log:        io.Discard,
		components: st.Components,
	}, nil
}

// LogTo sends the cluster's progress and error lines to w from now on;
// Attach starts with none.
func (c *Cluster) LogTo(w io.Writer) { c.log = w }

// Stop ends the cluster's processes, newest first: SIGTERM to each process
// group, SIGKILL after a grace period. It signals only processes it started
// (checked by PID and start time) and leaves Dir in place for the logs.
func (c *Cluster) Stop() error {
	// The keeper takes c.mu itself, so it is ended before Stop takes it.
	c.mu.Lock()
	stopKeeper := c.stopKeeper
	c.stopKeeper = nil
	c.mu.Unlock()
	if stopKeeper != nil {
		stopKeeper()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i := len(c.components) - 1; i >= 0; i-- {
		p, t := c.components[i], time.Now()
		if !p.running() {
			continue
		}
		if err := p.stop(syscall.SIGTERM, 10*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		c.logf("%s stopped (%s)", p.Name, time.Since(t).Round(10*time.Millisecond))
	}
	if len(errs) > 0 {
		_ = c.saveState()
		return fmt.Errorf("stop cluster in %s: %w", c.Dir, errors.Join(errs...))
	}
	if err := os.Remove(filepath.Join(c.Dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop cluster: %w", err)
	}
	return nil
}

// Kill ends one component at once with SIGKILL, as a crash would. Restart
// brings it back.
func (c *Cluster) Kill(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.component(name)
	if err != nil {
		return err
	}
	if err := p.stop(syscall.SIGKILL, 10*time.Second); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	return c.saveState()
}

// Restart stops one component (gracefully; at once if Kill ended it
// already), starts it again with the same flags and ports, and waits until
// it is healthy.
func (c *Cluster) Restart(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.component(name)
	if err != nil {
		return err
	}
	if err := p.stop(syscall.SIGTERM, 10*time.Second); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := p.start(c.Dir, c.detach); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := c.saveState(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.waitHealthy(ctx, p)
}

// PIDs returns the process ID of every component that runs now.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for _, p := range c.components {
		if p.running() {
			pids[p.Name] = p.PID
		}
	}
	return pids
}

// RESTConfig returns a client configuration for the admin user.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load admin kubeconfig: %w", err)
	}
	return cfg, nil
}

// WriteUserKubeconfig writes a kubeconfig for user (with groups), whose
// client certificate is signed by the cluster CA. RBAC grants such a user
// nothing until a test binds a role to it.
func (c *Cluster) WriteUserKubeconfig(path, user string, groups ...string) error {
	ca, err := loadAuthority(c.pkiPath("ca.crt"), c.pkiPath("ca.key"))
	if err != nil {
		return fmt.Errorf("user kubeconfig: %w", err)
	}
	creds, err := ca.clientCert(user, groups...)
	if err != nil {
		return fmt.Errorf("user kubeconfig: %w", err)
	}
	return writeKubeconfig(path, c.Server, ca.certPEM, kubeUser{context: user, name: user, creds: creds})
}

func (c *Cluster) component(name string) (*component, error) {
	for _, p := range c.components {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no component %q in cluster %s", name, c.Dir)
}

// saveState records the processes; callers hold c.mu. Written to a
// temporary file first so that a reader never sees half a file.
func (c *Cluster) saveState() error {
	data, err := json.MarshalIndent(state{Server: c.Server, Kubeconfig: c.Kubeconfig, Components: c.components}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode cluster state: %w", err)
	}
	tmp := filepath.Join(c.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(c.Dir, stateFile)); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	return nil
}

func (c *Cluster) pkiPath(name string) string { return filepath.Join(c.Dir, "pki", name) }

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "localcluster: "+format+"\n", args...)
}

// StartAPIServer starts another API server on the cluster's etcd, with the
// first one's certificates and flags, its own free port and args appended
// (so they override), and waits until it is ready. It returns the path of
// an admin kubeconfig for it. Kill, Restart and Stop handle it by name.
func (c *Cluster) StartAPIServer(ctx context.Context, name string, args ...string) (kubeconfig string, err error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("start API server: bad name %q", name)
	}
	p, err := c.addAPIServer(name, args)
	if err != nil {
		return "", fmt.Errorf("start API server %s: %w", name, err)
	}
	if err := c.waitHealthy(ctx, p); err != nil {
		return "", fmt.Errorf("start API server %s: %w", name, err)
	}
	kubeconfig = filepath.Join(c.Dir, "kubeconfig-"+name)
	admin, err := readKeyPair(c.pkiPath("admin.crt"), c.pkiPath("admin.key"))
	if err != nil {
		return "", err
	}
	caPEM, err := os.ReadFile(c.pkiPath("ca.crt"))
	if err != nil {
		return "", fmt.Errorf("read CA: %w", err)
	}
	server := strings.TrimSuffix(p.Health, "/readyz")
	if err := writeKubeconfig(kubeconfig, server, caPEM, kubeUser{context: AdminContext, name: "podsync-admin", creds: admin}); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

func (c *Cluster) addAPIServer(name string, args []string) (*component, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.component(name); err == nil {
		return nil, errors.New("a component of that name exists")
	}
	base, err := c.component(APIServer)
	if err != nil {
		return nil, err
	}
	port, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	p := &component{
		Name:   name,
		Binary: base.Binary,
		Args:   append(append(slices.Clone(base.Args), "--secure-port="+strconv.Itoa(port[0])), args...),
		Log:    filepath.Join(c.Dir, "logs", name+".log"),
		Health: loopback("https", port[0], "/readyz"),
	}
	if err := p.start(c.Dir, c.detach); err != nil {
		return nil, err
	}
	c.components = append(c.components, p)
	return p, c.saveState()
}
