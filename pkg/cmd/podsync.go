// Package cmd is the `kubectl podsync` command: its flags, their validation,
// and the run that wires the source, the controller and the output together.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/output"
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
  kubectl podsync -l app=web --until ready --timeout 5m`

// Options holds every flag of the command and what Complete derives.
type Options struct {
	configFlags *genericclioptions.ConfigFlags
	printFlags  *get.PrintFlags
	genericiooptions.IOStreams

	allNamespaces bool
	labelSelector string
	fieldSelector string
	names         []string
	watchOnly     bool
	workers       int
	maxRetries    int
	resync        time.Duration
	color         string
	once          bool
	timeout       time.Duration
	checkFlags    check.Flags
	klogFlags     *flag.FlagSet

	// Set by Complete and Validate.
	namespace  string
	restConfig *rest.Config
	spec       check.Spec
	writer     *output.Writer
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
		checkFlags:  check.Flags{MinPods: check.Unset, MaxRestarts: check.Unset},
	}
}

// NewCommand builds `kubectl podsync`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	c := &cobra.Command{
		Use:     "podsync [POD_NAME ...] [flags]",
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
			if err := o.Complete(c, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
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
	f.BoolVar(&o.watchOnly, "watch-only", false, "Do not print SYNC messages for the pods of the initial list.")
	f.IntVar(&o.workers, "workers", o.workers, "Workers taking pod keys from the rate-limited queue.")
	f.IntVar(&o.maxRetries, "max-retries", o.maxRetries, "Failed attempts for one pod key before it is dropped with an error.")
	f.DurationVar(&o.resync, "resync", 0, "Informer resync period (0: none). Resyncs of unchanged pods print nothing.")
	f.StringVar(&o.color, "color", o.color, "Colour the EVENT column: auto (only on a terminal, never with NO_COLOR), always or never.")
	f.BoolVar(&o.once, "once", false, "Print the current state (SYNC messages) and exit; with --until, judge it once.")
	f.DurationVar(&o.timeout, "timeout", 0, "Stop after this long (0: never). With --until not yet met, exit 3.")
	f.StringVar(&o.checkFlags.Until, "until", "", "Exit 0 once every matching pod satisfies every condition: ready, running, succeeded, completed, healthy, gone, condition=TYPE[=STATUS].")
	f.IntVar(&o.checkFlags.MinPods, "min-pods", check.Unset, "With --until: how many pods must match (default 1, 0 for gone).")
	f.StringVar(&o.checkFlags.FailOn, "fail-on", "", "Exit 4 at once when a matching pod shows one of these reasons (default with --until: "+check.FormatReasons(check.DefaultFailOn())+"; none turns it off).")
	f.IntVar(&o.checkFlags.MaxRestarts, "max-restarts", check.Unset, "With --until: exit 4 when a container restarts more than this many times while the check runs.")
	o.klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(o.klogFlags)
	f.AddGoFlag(o.klogFlags.Lookup("v"))
	f.Lookup("v").Usage = "Log level for client-side diagnostics on stderr (tokens are never shown)."
}

// Complete reads the kubeconfig (no request is made) and derives the rest.
func (o *Options) Complete(c *cobra.Command, args []string) error {
	o.names = args
	o.checkFlags.UntilSet = c.Flags().Changed("until")
	o.checkFlags.FailOnSet = c.Flags().Changed("fail-on")
	o.quietKlog(c)
	if err := negativeCounts(c); err != nil {
		return err
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return usageError("kubeconfig: %s", oneLine(err))
	}
	o.namespace = ns
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

// negativeCounts refuses --min-pods and --max-restarts below 0. Their
// "not given" value is check.Unset (-1), so a -1 typed by the user must
// be caught here, where the flag set knows it was given.
func negativeCounts(c *cobra.Command) error {
	for _, name := range []string{"min-pods", "max-restarts"} {
		f := c.Flags().Lookup(name)
		if f != nil && f.Changed && strings.HasPrefix(f.Value.String(), "-") {
			return usageError("invalid --%s %s: must be 0 or more", name, f.Value.String())
		}
	}
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

// Validate checks every value before any cluster call.
func (o *Options) Validate() error {
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
	spec, err := o.checkFlags.Spec()
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	o.spec = spec
	if o.once && o.watchOnly {
		return usageError("--once prints the initial list and --watch-only hides it: use one of them")
	}
	w, err := output.New(output.Options{
		PrintFlags: o.printFlags, AllNamespaces: o.allNamespaces, WatchOnly: o.watchOnly,
		Color: output.ColorWanted(o.color, o.Out), Out: o.Out,
	})
	if err != nil {
		return usageError("%s", oneLine(err))
	}
	o.writer = w
	return nil
}

func (o *Options) validateNumbers() error {
	switch {
	case o.workers < 1:
		return usageError("invalid --workers %d: must be at least 1", o.workers)
	case o.maxRetries < 1:
		return usageError("invalid --max-retries %d: must be at least 1", o.maxRetries)
	case o.resync < 0:
		return usageError("invalid --resync %s: must not be negative", o.resync)
	case o.timeout < 0:
		return usageError("invalid --timeout %s: must not be negative", o.timeout)
	}
	switch o.color {
	case "auto", "always", "never":
		return nil
	}
	return usageError("invalid --color %q: want auto, always or never", o.color)
}

// oneLine keeps an error to the single line the contract promises.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Execute runs the command with args and returns the process exit code.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	c := NewCommand(streams)
	c.SetArgs(args)
	c.SetIn(streams.In)
	c.SetOut(streams.Out)
	c.SetErr(streams.ErrOut)
	err := c.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintf(streams.ErrOut, "error: %s\n", err)
	}
	return ExitCode(err)
}
