package cmd

import "github.com/spf13/cobra"

// addProbeFlags registers --probe-budget.
func (o *Options) addProbeFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.probeBudget, "probe-budget", "auto", "With --until: exit 4 when a running container stays not ready this long after it started while the kubelet reports its readiness or startup probe failing (Unhealthy events): auto works it out from each container's probes (initialDelaySeconds + periodSeconds × failureThreshold, startup probe first, plus one period and timeoutSeconds), a duration sets it for every container, never turns it off. Without probes nothing changes.")
}
