package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is every flag of a bench run.
type config struct {
	sizes       []int
	runs        int
	rates       []float64
	duration    time.Duration
	churn       bool
	churnPeers  []string
	method      string
	warmup      bool
	check       bool
	wire        bool
	guard       bool
	apiMemory   bool
	apiMemRuns  int
	memBudget   int64 // bytes; 0: what the machine has available
	bin         string
	plugin      string
	compare     []build
	dir         string
	attach      string
	keep        bool
	status      string
	shape       string
	shapeGiven  bool // -pod-shape was on the command line
	nodes       int
	namespaces  int
	perApp      int
	loaders     int
	only        map[string]bool
	out         string
	smoke       bool
	live        bool
	timeout     time.Duration
	apiArgs     []string
	clusters    int
	clusterPods int
	crs         int  // custom resources of the custom resource scenario; 0: not run
	crsOnly     bool // run only that scenario
	verdictRuns int  // trials of each verdict latency case; 0: not run
}

// listFlags are the flags that are parsed into lists after flag.Parse.
type listFlags struct {
	pods, rates, compare, only, apiArgs, churnPeers string
}

// defaultAPIServerArgs let the API server take the loader's requests and
// serve one unpaginated LIST of 150,000 pods (a minute-plus as JSON on two
// busy cores) without its 60 s request timeout.
const defaultAPIServerArgs = "--max-requests-inflight=1000,--max-mutating-requests-inflight=500,--request-timeout=10m"

func (c *config) register(fl *flag.FlagSet) *listFlags {
	l := &listFlags{}
	fl.StringVar(&l.pods, "pods", "20000", "pod counts to measure, comma-separated and increasing (e.g. 5000,20000,50000); pods are added between sizes")
	fl.IntVar(&c.runs, "runs", 5, "repetitions of each command per size, alternating the commands")
	fl.StringVar(&l.rates, "rate", "1000", "churn: pod updates per second; several, comma-separated, run one churn each (e.g. 1000,250)")
	fl.DurationVar(&c.duration, "duration", 60*time.Second, "churn: how long the loader updates pods")
	fl.BoolVar(&c.churn, "churn", true, "run the churn measurement after the command measurements")
	fl.StringVar(&l.churnPeers, "churn-peers", strings.Join(churnPeerIDs, ","), "churn: watchers measured after podsync under the same load, comma-separated ("+strings.Join(churnPeerIDs, ",")+"; empty for none)")
	fl.StringVar(&c.method, "update", "put", "churn: how the loader changes a pod: put (a protobuf update of the whole pod) or patch (a JSON merge patch of its annotations)")
	fl.BoolVar(&c.warmup, "warmup", true, "run each command once, untimed, before the measured runs")
	fl.BoolVar(&c.check, "check", true, "before measuring, check that podsync's table and JSON match kubectl's and that the table takes its fast path")
	fl.BoolVar(&c.wire, "wire", true, "measure the bytes of one unpaginated LIST in each format (the JSON and Table ones cost the API server a lot at 150,000 pods)")
	fl.BoolVar(&c.apiMemory, "apiserver-memory", true, "after the rounds, restart the API server before each further run of podsync, kubectl and the floor, and measure what serving it took")
	fl.IntVar(&c.apiMemRuns, "apiserver-memory-runs", 5, "-apiserver-memory: runs of each client, alternating, each on a freshly restarted API server; the target compares medians")
	fl.BoolVar(&c.live, "live", true, "write one pod before each measured run, as a live cluster's pods are written: the API server then serves a list's later pages from its watch cache, where on an idle cluster it reads them from etcd")
	fl.BoolVar(&c.guard, "guard", true, "skip a command whose peak RSS, estimated from the smaller sizes, would not fit in the memory available")
	fl.Func("mem-budget", "memory the guard may count on, in MiB, at most (default: what the machine has available; less to leave room for others)", func(v string) error {
		mib, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mib < 1 {
			return errors.New("want a number of MiB above 0")
		}
		c.memBudget = mib << 20
		return nil
	})
	fl.StringVar(&c.bin, "bin", os.Getenv("PODSYNC_TOOLS_BIN"), "folder with etcd, kube-apiserver, ..., kubectl and kwok (hack/build-tools.sh prints it; default $PODSYNC_TOOLS_BIN)")
	fl.StringVar(&l.compare, "compare", "", "also measure these prebuilt plugins, alternating with the rest: NAME=PATH,... (NAME: letters and digits; for before/after tables)")
	fl.StringVar(&c.plugin, "plugin", "", "measure this prebuilt kubectl-podsync instead of building the one in this tree (for before/after comparisons)")
	fl.StringVar(&c.dir, "dir", "", "cluster working folder (default: a new temporary folder)")
	fl.StringVar(&c.attach, "attach", "", "use the cluster a previous -keep run left in this folder instead of starting one")
	fl.BoolVar(&c.keep, "keep", false, "leave the cluster running at the end (for profiling; stop it with go run ./hack/cluster down --dir DIR)")
	fl.StringVar(&c.status, "status", "self", "who makes pods Running and Ready: self (the loader writes the statuses, on nodes kwok does not manage) or kwok (kwok's fast stages on its nodes)")
	fl.StringVar(&c.shape, "pod-shape", "deployment", "what each pod holds: deployment (two containers with env, probes, ports, a volume: about 6 KB of protobuf as served, managedFields included) or small (one container with requests, no service-account token: about 2.8 KB, near the size of a plain pod; 150,000 of them fit a 24 GiB machine's API server)")
	fl.IntVar(&c.nodes, "nodes", 10, "nodes the pods are spread over")
	fl.IntVar(&c.namespaces, "namespaces", 20, "namespaces the pods are spread over")
	fl.IntVar(&c.perApp, "pods-per-replicaset", 25, "pods per ReplicaSet owner")
	fl.IntVar(&c.loaders, "loaders", 48, "goroutines creating pods")
	fl.StringVar(&l.only, "only", "", "measure only these commands (comma-separated ids: "+strings.Join(commandIDs(), ",")+"; floor: every floor-* variant)")
	fl.StringVar(&c.out, "out", "", "also write the Markdown report to this file")
	fl.BoolVar(&c.smoke, "smoke", false, "small run for make test: -pods 300 -runs 1 -duration 3s -rate 300 -warmup=false unless given; exits 1 if anything is lost")
	fl.DurationVar(&c.timeout, "timeout", 4*time.Hour, "bound for the whole run")
	fl.StringVar(&l.apiArgs, "apiserver-args", defaultAPIServerArgs, "extra kube-apiserver flags, comma-separated")
	fl.IntVar(&c.clusters, "clusters", 0, "after the sizes, start this many clusters (2 to 5) of -cluster-pods pods each and measure `kubectl podsync --context a,b,... -A --once` against one `kubectl get pods -A` per cluster (0: not)")
	fl.IntVar(&c.clusterPods, "cluster-pods", 10000, "pods in each cluster of -clusters")
	fl.IntVar(&c.crs, "crs", 1000, "at the end, on a cluster of its own, create this many Ready custom resources of one kind in one namespace and measure `kubectl podsync -f` on a manifest of them and of one, against `kubectl wait --for=condition=Ready --all` (0: not)")
	fl.IntVar(&c.verdictRuns, "verdict-runs", 20, "after the churn, trials of each verdict latency case: `kubectl podsync -A --until ready` decided by one pod turning Ready or entering CrashLoopBackOff while pods change at the first -rate (0: not run)")
	fl.BoolVar(&c.crsOnly, "crs-only", false, "run only the custom resource scenario of -crs (no pods, no churn), 3 runs unless -runs is given: some 15 minutes on two busy cores")
	return l
}

func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fl := flag.NewFlagSet("bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	lists := c.register(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fl.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q", fl.Args())}
	}
	if c.smoke {
		c.smokeDefaults(fl, lists)
	}
	fl.Visit(func(f *flag.Flag) { c.shapeGiven = c.shapeGiven || f.Name == "pod-shape" })
	if c.crsOnly {
		c.crsOnlyDefaults(fl)
	}
	if err := c.parseLists(lists); err != nil {
		return nil, usageError{err}
	}
	if err := c.validate(); err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// smokeDefaults makes -smoke small, but for the flags given with it.
func (c *config) smokeDefaults(fl *flag.FlagSet, l *listFlags) {
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	defaults := map[string]func(){
		"pods":                  func() { l.pods = "300" },
		"runs":                  func() { c.runs = 1 },
		"apiserver-memory-runs": func() { c.apiMemRuns = 1 },
		"duration":              func() { c.duration = 3 * time.Second },
		"rate":                  func() { l.rates = "300" },
		"warmup":                func() { c.warmup = false },
		"timeout":               func() { c.timeout = 10 * time.Minute },
		"crs":                   func() { c.crs = 0 },
		"verdict-runs":          func() { c.verdictRuns = 1 },
	}
	for name, apply := range defaults {
		if !set[name] {
			apply()
		}
	}
}

// crsOnlyDefaults keeps -crs-only to a few minutes: 3 runs unless -runs
// is given (`kubectl wait --all` takes about two minutes a run on two
// busy cores).
func (c *config) crsOnlyDefaults(fl *flag.FlagSet) {
	runs := false
	fl.Visit(func(f *flag.Flag) { runs = runs || f.Name == "runs" })
	if !runs {
		c.runs = 3
	}
}

func (c *config) parseLists(l *listFlags) error {
	var err error
	if c.sizes, err = parseSizes(l.pods); err != nil {
		return err
	}
	if c.rates, err = parseRates(l.rates); err != nil {
		return err
	}
	if c.compare, err = parseBuilds(l.compare); err != nil {
		return err
	}
	if c.only, err = parseOnly(l.only); err != nil {
		return err
	}
	if c.churnPeers, err = parseChurnPeers(l.churnPeers); err != nil {
		return err
	}
	if l.apiArgs != "" {
		c.apiArgs = strings.Split(l.apiArgs, ",")
	}
	return nil
}

// validate checks the flags against each other, in the order of this table.
func (c *config) validate() error {
	for _, r := range []struct {
		bad bool
		msg string
	}{
		{c.bin == "", "-bin or $PODSYNC_TOOLS_BIN is required (PODSYNC_TOOLS_BIN=\"$(hack/build-tools.sh)\")"},
		{c.runs < 1 || c.runs > 100, fmt.Sprintf("-runs %d: want 1 to 100", c.runs)},
		{c.apiMemRuns < 1 || c.apiMemRuns > 20, fmt.Sprintf("-apiserver-memory-runs %d: want 1 to 20", c.apiMemRuns)},
		{c.duration <= 0 || c.duration > time.Hour, fmt.Sprintf("-duration %s: want more than 0 and at most 1h", c.duration)},
		{c.method != "put" && c.method != "patch", fmt.Sprintf("-update %q: want put or patch", c.method)},
		{c.status != "self" && c.status != "kwok", fmt.Sprintf("-status %q: want self or kwok", c.status)},
		{c.shape != "deployment" && c.shape != "small", fmt.Sprintf("-pod-shape %q: want deployment or small", c.shape)},
		{c.nodes < 1 || c.nodes > 60, fmt.Sprintf("-nodes %d: want 1 to 60", c.nodes)},
		{c.namespaces < 1 || c.namespaces > 1000, fmt.Sprintf("-namespaces %d: want 1 to 1000", c.namespaces)},
		{c.perApp < 1 || c.loaders < 1 || c.loaders > 512, "-pods-per-replicaset must be at least 1 and -loaders 1 to 512"},
		{c.timeout <= 0, "-timeout must be positive"},
		{c.clusters != 0 && (c.clusters < 2 || c.clusters > 5), fmt.Sprintf("-clusters %d: want 0 (none) or 2 to 5", c.clusters)},
		{c.clusterPods < 2 || c.clusterPods > 200000, fmt.Sprintf("-cluster-pods %d: want 2 to 200000", c.clusterPods)},
		{c.clusters > 0 && c.attach != "", "-clusters starts its own clusters: it does not go with -attach"},
		{c.crs != 0 && (c.crs < 2 || c.crs > 100000), fmt.Sprintf("-crs %d: want 0 (none) or 2 to 100000", c.crs)},
		{c.crsOnly && c.crs == 0, "-crs-only needs -crs above 0"},
		{c.verdictRuns < 0 || c.verdictRuns > 1000, fmt.Sprintf("-verdict-runs %d: want 0 (none) to 1000", c.verdictRuns)},
		{c.crsOnly && (c.attach != "" || c.clusters > 0), "-crs-only starts its own cluster: it does not go with -attach or -clusters"},
	} {
		if r.bad {
			return errors.New(r.msg)
		}
	}
	return nil
}

// build is a prebuilt plugin measured next to this tree's.
type build struct{ name, path string }

var buildName = regexp.MustCompile(`^[A-Za-z0-9]+$`)

func parseBuilds(s string) ([]build, error) {
	if s == "" {
		return nil, nil
	}
	var out []build
	for _, f := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(f, "=")
		if !ok || !buildName.MatchString(name) || path == "" {
			return nil, fmt.Errorf("-compare: %q is not NAME=PATH with a NAME of letters and digits", f)
		}
		out = append(out, build{name: name, path: path})
	}
	return out, nil
}

// parseOnly reads -only; "floor" stands for every floor variant.
func parseOnly(s string) (map[string]bool, error) {
	if s == "" {
		return nil, nil
	}
	known := commandIDs()
	out := map[string]bool{}
	for _, id := range strings.Split(s, ",") {
		switch {
		case id == "floor":
			for _, k := range known {
				if strings.HasPrefix(k, "floor-") {
					out[k] = true
				}
			}
		case slices.Contains(known, id):
			out[id] = true
		default:
			return nil, fmt.Errorf("-only: unknown command %q (known: floor,%s)", id, strings.Join(known, ","))
		}
	}
	return out, nil
}

func parseChurnPeers(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	peers := strings.Split(s, ",")
	for _, id := range peers {
		if !slices.Contains(churnPeerIDs, id) {
			return nil, fmt.Errorf("-churn-peers: unknown watcher %q (known: %s)", id, strings.Join(churnPeerIDs, ","))
		}
	}
	return peers, nil
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 || r > 20000 {
			return nil, fmt.Errorf("-rate: %q is not a rate above 0 and at most 20000 updates per second", f)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 200000 {
			return nil, fmt.Errorf("-pods: %q is not a pod count from 2 to 200000", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-pods: counts must increase (%d after %d)", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}
