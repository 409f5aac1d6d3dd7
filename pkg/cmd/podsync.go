// Package cmd is the `kubectl podsync` command: its flags, their
// validation into a podsync.Config, and the exit code of the outcome. The
// run itself is pkg/podsync.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/target"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/version"
)

const example = `  # Watch the pods of the current namespace: SYNC for each existing pod, then ADD, UPDATE, GONE
  kubectl podsync

  # Watch a workload in every namespace, only changes from now on
  kubectl podsync -A -l app=web --watch-only

  # Follow one pod, even before it exists
  kubectl podsync my-pod

  # One JSON object per line: {"type":"UPDATE","object":{...}}
  kubectl podsync -l app=web -o json

  # CI: wait until every app=web pod is ready, fail fast on a crash loop
  kubectl podsync -l app=web --until ready --timeout 5m

  # CI: gate everything a manifest holds, workloads by their rollout, custom resources by
  # kstatus's conventions or your CEL rules, and the pods they control
  kubectl apply -f k8s/ && kubectl podsync -f k8s/ --until ready --health-rules rules.yaml --timeout 5m

  # One stream and one gate over several clusters: a CONTEXT column, met when met in each
  kubectl podsync --context 'prod-*' -l app=web --until ready --timeout 10m`

// Bounds of the numeric flags: beyond them a value is a mistake, not a
// choice (a thousand workers on one queue, a resync that spins).
const (
	maxWorkers  = 64
	maxRetries  = 100
	minResync   = time.Second
	maxLogLines = 1000
)

// Options holds every flag of the command and what Complete derives.
type Options struct {
	configFlags *genericclioptions.ConfigFlags
	printFlags  *get.PrintFlags
	genericiooptions.IOStreams

	allNamespaces bool
	labelSelector string
	fieldSelector string
	names         []string
	filenames     []string
	recursive     bool
	watchOnly     bool
	workers       int
	maxRetries    int
	resync        time.Duration
	color         string
	once          bool
	timeout       time.Duration
	until         string
	failOn        string
	minPods       optionalCount
	maxRestarts   optionalCount
	failAfter     time.Duration
	stableFor     time.Duration
	probeBudget   string
	skipUnavail   bool
	klogFlags     *flag.FlagSet
	diagnose      bool
	events        bool
	logLines      int
	progress      time.Duration
	healthRules   []string
	showRules     bool
	// getenv reads the environment (GitHub Actions); tests replace it.
	getenv func(string) string

	// Set by Complete and Validate.
	untilSet, failOnSet bool
	namespace           string
	explicitNamespace   bool
	plan                *target.Plan
	restConfig          *rest.Config
	// contexts are the contexts of a run over several (--context list or
	// pattern); empty for one.
	contexts []kubeContext
	config   podsync.Config
	// prep is the state of the work before the run proper (runBounded);
	// nil when Run is called alone.
	prep *preparation
}

// NewOptions returns options with the contract's defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		configFlags: genericclioptions.NewConfigFlags(true),
		printFlags:  get.NewGetPrintFlags(),
		IOStreams:   streams,
		workers:     1,
		maxRetries:  5,
		color:       "auto",
		logLines:    10,
		progress:    30 * time.Second,
		getenv:      os.Getenv,
	}
}

// NewCommand builds `kubectl podsync`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	c := &cobra.Command{
		Use:     "podsync [POD_NAME | TYPE/NAME ...] [-f FILE|DIR|- ...] [flags]",
		Short:   "Watch pods and report every change: SYNC, ADD, UPDATE, GONE",
		Long:    "Watch pods and report every change as it happens, in the columns of `kubectl get pods`.\nWith --until it is a cluster check for CI whose exit code tells what happened.",
		Example: example,
		Version: version.String(),
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl podsync",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, args []string) error {
			return o.runBounded(c.Context(), c, args)
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	c.SetVersionTemplate("{{.Version}}\n")
	o.AddFlags(c)
	o.registerCompletions(c)
	return c
}

// AddFlags registers every flag in one place.
func (o *Options) AddFlags(c *cobra.Command) {
	f := c.Flags()
	o.configFlags.AddFlags(f)
	o.printFlags.AddFlags(c)
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Watch pods in every namespace; the table gains a NAMESPACE column.")
	f.StringVarP(&o.labelSelector, "selector", "l", "", "Label selector, applied by the server (e.g. -l app=web,tier!=cache).")
	f.StringVar(&o.fieldSelector, "field-selector", "", "Field selector, applied by the server (e.g. --field-selector status.phase=Running).")
	o.addTargetFlags(c)
	f.BoolVar(&o.watchOnly, "watch-only", false, "Do not print SYNC messages for the pods of the initial list; every change after the list is still printed.")
	f.IntVar(&o.workers, "workers", o.workers, fmt.Sprintf("Workers taking pod keys from the rate-limited queue (1 to %d).", maxWorkers))
	f.IntVar(&o.maxRetries, "max-retries", o.maxRetries, fmt.Sprintf("Failed attempts of one pod key's work before it is dropped with an error (1 to %d).", maxRetries))
	f.DurationVar(&o.resync, "resync", 0, "Informer resync period (0: none; else at least 1s). Resyncs of unchanged pods print nothing.")
	f.StringVar(&o.color, "color", o.color, "Colour the EVENT column, and CONTEXT with several contexts: auto (only on a terminal, never with NO_COLOR), always or never.")
	f.BoolVar(&o.once, "once", false, "Print the current state (SYNC messages) and exit (with no pods, says \"No resources found\" on stderr, as kubectl get does); with --until, judge it once.")
	f.DurationVar(&o.timeout, "timeout", 0, "Stop after this long (0: never). With --until not yet met, exit 3.")
	f.StringVar(&o.until, "until", "", "Exit 0 once every matching pod satisfies every condition: "+joinWords(check.Keywords())+".")
	f.Var(&o.minPods, "min-pods", "With --until: how many pods must match; when not given, 1 (0 for gone).")
	f.StringVar(&o.failOn, "fail-on", "", "Exit 4 at once when a matching pod shows one of these reasons (default with --until: "+check.FormatReasons(check.DefaultFailOn())+"; none turns it off). A Failed pod that its ReplicaSet, StatefulSet or DaemonSet replaces (evicted, shut down) is named once and not judged.")
	f.Var(&o.maxRestarts, "max-restarts", "With --until: exit 4 when a container restarts more than this many times while the check runs; when not given, restarts are not counted.")
	f.DurationVar(&o.failAfter, "fail-after", 0, "Exit 4 on a --fail-on reason or --max-restarts only once the pod has shown it for this long without turning Ready (0: at once); a Failed pod holds until it is gone. The summary says how long it held.")
	f.DurationVar(&o.stableFor, "stable-for", 0, "With --until: once met, keep judging for this long; a restart, a pod that stops satisfying --until, a failing replacement or a target back to progressing is exit 4 (0: end when met).")
	f.StringArrayVar(&o.healthRules, "health-rules", nil, "Judge the kinds these files name by their CEL rules (a list of apiVersion, kind, current, inProgress, failed, as Flux's healthCheckExprs); repeatable. A rule for a kind replaces podsync's built-in rule for it (--show-health-rules lists them). Without a rule, a target of a kind that is not a workload is judged by kstatus's conventions.")
	f.BoolVar(&o.showRules, "show-health-rules", false, "Print the health rules in effect and exit, without a cluster: the built-in rules for popular operators' kinds with the upstream version each was read from, and those of --health-rules, marking the ones that replace a built-in rule. The output is a --health-rules file.")
	f.BoolVar(&o.skipUnavail, "skip-unavailable", false, "With several contexts: go on without a context that cannot be used at start (said once on stderr; a check counts it as failed, never as met) instead of exiting 1.")
	f.Lookup("context").Usage = "The kubeconfig context to use; a comma-separated list or shell patterns (--context 'prod-*') watch several at once, with a CONTEXT column."
	o.addDiagnosisFlags(c)
	o.addProbeFlags(c)
	// kubectl's words for these speak of lists; podsync streams.
	f.Lookup("sort-by").Usage = "Order the initial list (the SYNC block) by this JSONPath field, as kubectl get --sort-by orders its list (e.g. '{.metadata.creationTimestamp}'); later changes print as they come."
	f.Lookup("show-managed-fields").Usage = "Keep managedFields in JSON, YAML and template output (they are never printed otherwise)."
	o.klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(o.klogFlags)
	f.AddGoFlag(o.klogFlags.Lookup("v"))
	f.Lookup("v").Usage = "Log level for client-side diagnostics on stderr (tokens are never shown)."
}

// Complete reads the kubeconfig (no request is made) and derives the rest.
func (o *Options) Complete(c *cobra.Command, args []string) error {
	o.names = args
	o.untilSet = c.Flags().Changed("until")
	o.failOnSet = c.Flags().Changed("fail-on")
	if err := o.selectContexts(); err != nil {
		return err
	}
	if len(o.contexts) > 0 {
		first := o.usable()
		if first == nil {
			return o.checkUnusable()
		}
		// Each context has its own namespace; they share --request-timeout.
		o.restConfig = first.restConfig
		o.namespace = first.namespace
		o.explicitNamespace = o.configFlags.Namespace != nil && *o.configFlags.Namespace != ""
		return nil
	}
	ns, explicit, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return usageError("kubeconfig: %s", oneLine(err))
	}
	o.namespace, o.explicitNamespace = ns, explicit
	if o.allNamespaces {
		o.namespace = ""
	}
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return usageError("kubeconfig: %s", oneLine(err))
	}
	if err := noCluster(o.configFlags); err != nil {
		return err
	}
	o.restConfig = cfg
	return nil
}

// quietKlog keeps client-go's own logs off stderr unless -v asks for them:
// podsync reports connection trouble itself, once, and client-go would
// otherwise print every failed retry of the reflector as an error line.
// With -v, klog writes to stderr as in kubectl; client-go masks the
// Authorization header even at -v=9, so tokens never show.
func (o *Options) quietKlog(c *cobra.Command) {
	if c.Flags().Changed("v") {
		_ = o.klogFlags.Set("logtostderr", "true")
		klog.SetOutput(o.ErrOut)
		return
	}
	// Off stderr entirely: not logging to stderr, no severity below FATAL
	// copied there, and the log "files" discarded.
	_ = o.klogFlags.Set("logtostderr", "false")
	_ = o.klogFlags.Set("alsologtostderr", "false")
	_ = o.klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// Validate checks every value before any cluster call and builds the run's
// Config.
func (o *Options) Validate() error {
	if err := o.parseTargets(); err != nil {
		return err
	}
	if o.allNamespaces && len(o.names) > 0 {
		return usageError("pod names cannot be used with --all-namespaces: a name is only unique within one namespace")
	}
	if _, err := labels.Parse(o.labelSelector); err != nil {
		return usageError("invalid --selector %q: %s", o.labelSelector, oneLine(err))
	}
	if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
		return usageError("invalid --field-selector %q: %s", o.fieldSelector, oneLine(err))
	}
	if err := o.validateNumbers(); err != nil {
		return err
	}
	if o.once && o.watchOnly {
		return usageError("--once prints the initial list and --watch-only hides it: use one of them")
	}
	spec, err := o.checkFlags().Spec()
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	sortBy := *o.printFlags.HumanReadableFlags.SortBy
	if sortBy != "" {
		if err := podsync.ValidSortBy(sortBy); err != nil {
			return usageError("%s", oneLine(err))
		}
		// The writer prints one row at a time: the run sorts the list.
		*o.printFlags.HumanReadableFlags.SortBy = ""
	}
	rules, err := o.loadRules()
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	gh, err := o.gitHubActions()
	if err != nil {
		return err
	}
	// The run never blocks on a reader of stdout that does not read.
	detached := output.Detach(o.Out, podsync.StdoutSlack(spec))
	w, err := output.New(output.Options{
		PrintFlags: o.printFlags, AllNamespaces: o.allNamespaces || len(o.targetNamespaces()) > 1, WatchOnly: o.watchOnly,
		Color: output.ColorWanted(o.color, o.Out), Contexts: o.contextNames(), Out: detached,
		Events: o.events, StopCommands: stopToken(gh),
	})
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	o.config = podsync.Config{
		Scope: podsync.Scope{Namespace: o.namespace, AllNamespaces: o.allNamespaces,
			LabelSelector: o.labelSelector, FieldSelector: o.fieldSelector, Names: o.names},
		Output: w, Stdout: o.Out, Detached: detached, ErrOut: o.ErrOut, DeletedOnSuccess: o.plan.DeletedOnSuccess(),
		JSONSummary: w.Shape() == output.Event && *o.printFlags.OutputFormat == "json",
		Check:       spec, Once: o.once, Timeout: o.timeout,
		Workers: o.workers, MaxRetries: o.maxRetries, Resync: o.resync,
		WatchOnly: o.watchOnly, SortBy: sortBy,
		KeepManagedFields: o.printFlags.JSONYamlPrintFlags.ShowManagedFields && w.Shape() != output.Table,
		RequestTimeout:    o.restConfig.Timeout,
		SkipUnavailable:   o.skipUnavail,
		Diagnose:          o.diagnose, Events: o.events, LogLines: o.logLines,
		ProgressInterval: o.progress, GitHub: gh, HealthRules: rules,
	}
	return nil
}

func (o *Options) checkFlags() check.Flags {
	return check.Flags{
		Until: o.until, UntilSet: o.untilSet, FailOn: o.failOn, FailOnSet: o.failOnSet,
		MinPods: o.minPods.value(), MaxRestarts: o.maxRestarts.value(), FailAfter: o.failAfter, StableFor: o.stableFor,
		ProbeBudget: o.probeBudget,
	}
}

func (o *Options) validateNumbers() error {
	switch {
	case o.workers < 1 || o.workers > maxWorkers:
		return usageError("invalid --workers %d: must be from 1 to %d", o.workers, maxWorkers)
	case o.maxRetries < 1 || o.maxRetries > maxRetries:
		return usageError("invalid --max-retries %d: must be from 1 to %d", o.maxRetries, maxRetries)
	case o.resync < 0 || o.resync > 0 && o.resync < minResync:
		return usageError("invalid --resync %s: must be 0 (none) or at least %s", o.resync, minResync)
	case o.timeout < 0:
		return usageError("invalid --timeout %s: must not be negative", o.timeout)
	case o.logLines < 0 || o.logLines > maxLogLines:
		return usageError("invalid --log-lines %d: must be from 0 (no logs) to %d", o.logLines, maxLogLines)
	case o.progress < 0:
		return usageError("invalid --progress-interval %s: must not be negative (0: never)", o.progress)
	}
	switch o.color {
	case "auto", "always", "never":
		return nil
	}
	return usageError("invalid --color %q: want auto, always or never", o.color)
}

// loadRules reads and compiles the --health-rules files. Compiling many
// rules takes a while: a --timeout or a signal meanwhile says so.
func (o *Options) loadRules() (*health.Rules, error) {
	if len(o.healthRules) == 0 {
		return (*health.Rules)(nil).WithBuiltIn()
	}
	before := o.prep.swap(fmt.Sprintf("compiling the health rules (--health-rules %s)", strings.Join(o.healthRules, ", --health-rules ")))
	rules, err := health.Load(o.healthRules)
	if err != nil {
		return nil, err
	}
	o.prep.swap(before)
	return rules.WithBuiltIn()
}

// showHealthRules prints the rules in effect; no cluster is needed.
func (o *Options) showHealthRules() error {
	rules, err := o.loadRules()
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	return rules.Show(o.Out)
}

// Run runs the check or stream against the clusters of the kubeconfig's
// contexts.
func (o *Options) Run(ctx context.Context) error { return o.run(ctx, time.Now()) }

// run is Run for a command that started at start: --timeout counts from
// there.
func (o *Options) run(ctx context.Context, start time.Time) error {
	if err := o.checkUnusable(); err != nil {
		return err
	}
	if watch, err := o.resolveTargets(); !watch || err != nil {
		return err
	}
	clusters, err := o.clusters()
	if err != nil {
		return err
	}
	o.config.Started = start
	if o.timeout > 0 {
		o.config.Timeout = max(o.timeout-time.Since(start), time.Nanosecond)
	}
	if o.prep != nil && !o.prep.start() {
		return nil // --timeout or a signal ended the command already
	}
	return outcomeError(podsync.Run(ctx, o.config, clusters...))
}

// Execute runs the command with args and returns the process exit code.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	if ghactions.Active(os.Getenv) {
		// Errors and client-go's logs can quote the cluster too.
		streams.ErrOut = &ghactions.DefusedWriter{Raw: streams.ErrOut}
	}
	c := NewCommand(streams)
	c.SetArgs(args)
	c.SetIn(streams.In)
	c.SetOut(streams.Out)
	c.SetErr(streams.ErrOut)
	err := c.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errSilent) {
		// An error may quote the cluster's or a manifest's text.
		fmt.Fprintf(streams.ErrOut, "error: %s\n", text.Escape(oneLine(err)))
	}
	return ExitCode(err)
}
