// Package podsync is the run of kubectl podsync as a library: given a
// Config and the clients of one or more clusters, it lists and watches the
// pods, prints every change through one Writer, judges the check, and
// returns an Outcome. The command (pkg/cmd) only turns flags into a
// Config and an Outcome into an exit code.
package podsync

import (
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// Config is everything a run needs besides its clients. Every value has
// been validated by the caller.
type Config struct {
	Scope Scope
	// Targets, when set, are the workloads the run is about (TYPE/NAME,
	// -f): it shows their pods, in their own namespaces, instead of
	// Scope's, and adds each kind's rollout rule to the check.
	Targets []check.Target
	// DeletedOnSuccess maps targets that are hooks deleted once they
	// succeed (keyed with the namespace their manifest gave, empty when
	// none) to what their absence means: such a target is met while it
	// does not exist.
	DeletedOnSuccess map[check.Target]string
	// Output prints the messages; the run's one goroutine owns it.
	Output *output.Writer
	// Stdout is where Output writes, watched for a reader that goes away.
	Stdout io.Writer
	// Detached, when set, is the Output's writer to Stdout: it never blocks
	// the run on a reader that does not read (see StdoutSlack), and the
	// run drains it before it returns.
	Detached *output.Detached
	// ErrOut receives warnings, progress and the summary.
	ErrOut io.Writer
	// JSONSummary also writes the summary as one JSON line (-o json).
	JSONSummary bool
	// Check is the CI check; its zero Conditions mean no --until.
	Check check.Spec
	// Once judges the initial list and ends.
	Once bool
	// Timeout ends the run (0: never).
	Timeout time.Duration
	// Started is when the command started, what the summary's duration
	// counts from (zero: when Run is called); Timeout is what is left.
	Started time.Time
	// Workers and MaxRetries shape each cluster's queue.
	Workers, MaxRetries int
	// Resync is the informer's resync period (0: none).
	Resync time.Duration
	// WatchOnly hides the SYNC messages.
	WatchOnly bool
	// SortBy orders the initial SYNC block as kubectl get --sort-by does.
	SortBy string
	// KeepManagedFields keeps managedFields for outputs that print them.
	KeepManagedFields bool
	// RequestTimeout is --request-timeout, named when a request times out.
	RequestTimeout time.Duration
	// SkipUnavailable goes on without a cluster that cannot be used at
	// start, when the run has several: it is said once, and a check
	// counts it as failed, never as met.
	SkipUnavailable bool
	// Diagnose prints a DIAGNOSIS message for each pod that enters a
	// failure state (--diagnose). A check diagnoses such pods either way,
	// for its summary.
	Diagnose bool
	// Events prints the Kubernetes Events of the matched pods as WARNING
	// and NORMAL messages (--events).
	Events bool
	// LogLines is the length of a diagnosis' log tails (0: no logs).
	LogLines int
	// ProgressInterval: a check that printed nothing for this long says on
	// stderr what it waits on (0: never).
	ProgressInterval time.Duration
	// GitHub is set when the run is a GitHub Actions step.
	GitHub *GitHubActions
	// HealthRules judge the kinds they name (--health-rules); nil: none.
	HealthRules *health.Rules
}

// GitHubActions is what a run does for GitHub Actions (see
// ghactions.Run; ghactions.FromEnv makes it).
type GitHubActions = ghactions.Run

// Scope says which pods of each cluster match.
type Scope struct {
	// Namespace is the one namespace watched; "" with AllNamespaces.
	Namespace     string
	AllNamespaces bool
	LabelSelector string
	FieldSelector string
	// Names, when set, narrows the pods to these names.
	Names []string
}

// Clients are the API clients of one cluster.
type Clients struct {
	// Kube lists and gets (pods as protobuf, Deployments, Events); each of
	// its requests is bounded by --request-timeout.
	Kube kubernetes.Interface
	// KubeWatch watches pods; it has no client timeout, since a watch is
	// meant to stay open.
	KubeWatch kubernetes.Interface
	// Table lists pods as server-side tables; TableWatch watches them and,
	// like KubeWatch, has no client timeout.
	Table, TableWatch rest.Interface
	// Dynamic lists, and DynamicWatch watches, the targets of kinds judged
	// by their status (custom resources among them).
	Dynamic, DynamicWatch dynamic.Interface
	// Server is the API server's URL, named when it does not answer.
	Server string
}

// Cluster is one cluster a run watches.
type Cluster struct {
	// Name is the kubeconfig context's name; a run over several clusters
	// names it in each message and each line said about the cluster.
	Name    string
	Clients *Clients
	// Source, when set, replaces the pod source built from Clients.
	Source *source.Source
	// Dial, when set, builds the pod source in place of the one built
	// from Clients, reporting its requests to r: the run's connection to
	// the cluster, which tells a cluster that cannot be used at start
	// from a lost connection, as it does for a built source.
	Dial func(r source.Reporter) source.Source
	// Namespace, when set, is watched in this cluster in place of
	// Scope.Namespace (each context's own default namespace); not with
	// Scope.AllNamespaces.
	Namespace string
	// Targets, when set, are this cluster's in place of Config.Targets
	// (the same workloads, in the cluster's own namespace).
	Targets []check.Target
	// Unusable, when set, says why the cluster cannot be used at all (its
	// kubeconfig entry does not load, its discovery did not answer): the
	// run goes on without it, as with SkipUnavailable, and a check counts
	// it as failed. Clients and Source are then not read.
	Unusable error
}

// NewClients builds the clients of one cluster from its REST config: a
// protobuf clientset for plain pods, Deployments and Events, and JSON REST
// clients for server-side tables; the watch clients have no client
// timeout, so --request-timeout bounds requests but never cuts a watch.
func NewClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-podsync"
	cfg.QPS, cfg.Burst = 50, 100
	// The initial list's progress is told by the bytes that arrive.
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return progressTransport{next: rt} })
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kubeCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	tableCfg := rest.CopyConfig(cfg)
	tableCfg.GroupVersion = &corev1.SchemeGroupVersion
	tableCfg.APIPath = "/api"
	tableCfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()

	c := Clients{Server: cfg.Host}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		return nil, fmt.Errorf("pod client: %w", err)
	}
	if c.Table, err = rest.RESTClientFor(tableCfg); err != nil {
		return nil, fmt.Errorf("table client: %w", err)
	}
	kubeCfg.Timeout, tableCfg.Timeout = 0, 0
	if c.KubeWatch, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		return nil, fmt.Errorf("pod watch client: %w", err)
	}
	if c.TableWatch, err = rest.RESTClientFor(tableCfg); err != nil {
		return nil, fmt.Errorf("table watch client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	if c.DynamicWatch, err = dynamic.NewForConfig(watchCfg); err != nil {
		return nil, fmt.Errorf("dynamic watch client: %w", err)
	}
	return &c, nil
}

// StdoutSlack is how much printed text may wait for the reader of stdout
// before the run stops for it: a plain stream waits for its reader as
// soon as a message is pending (a reader that stops, stops the stream); a
// check has ample slack for a slow reader, and stops printing only when a
// reader has stopped reading, since its verdict must never wait on one.
func StdoutSlack(spec check.Spec) int {
	if spec.Judges() {
		return 16 << 20
	}
	return 64 << 10
}
