package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// machine describes where the numbers come from.
type machine struct {
	CPUs      int
	CPUModel  string
	MemoryGiB float64
	Load      string
	Kernel    string
	GoVersion string
}

// sizeResult is everything measured at one pod count.
type sizeResult struct {
	pods            int
	load            loadStats
	wire            wireSizes
	otherAPIServers []int
	commands        []*cmdResult
	churn           []*churnResult
}

type report struct {
	cfg          *config
	began        time.Time
	took         time.Duration
	machine      machine
	machineAfter machine
	// baseline is what the spawn helper measures for `true`.
	baseline sample
	sizes    []*sizeResult
}

func (r *report) lost() int {
	n := 0
	for _, s := range r.sizes {
		for _, c := range s.churn {
			n += c.Lost
		}
	}
	return n
}

func (s *sizeResult) find(id string) *cmdResult {
	for _, c := range s.commands {
		if c.cmd.id == id {
			return c
		}
	}
	return nil
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func spread(st stat, format string) string {
	return fmt.Sprintf(format+" ("+format+"–"+format+")", st.median, st.min, st.max)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (r *report) markdown() string {
	var b strings.Builder
	m := r.machine
	fmt.Fprintf(&b, "### Run of %s\n\n", r.began.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- command: `go run ./hack/bench %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), %.1f GiB memory, Linux %s, %s; load average %s at the start, %s at the end\n",
		m.CPUs, m.CPUModel, m.MemoryGiB, m.Kernel, m.GoVersion, m.Load, r.machineAfter.Load)
	fmt.Fprintf(&b, "- %d runs of each command per size, alternating the commands (order rotated each round); median (min–max); whole run took %s\n",
		r.cfg.runs, r.took.Round(time.Second))
	fmt.Fprintf(&b, "- pods: 2 containers, ReplicaSet owner, %d namespaces, %d nodes; statuses written by %s\n",
		r.cfg.namespaces, r.cfg.nodes, r.cfg.status)
	fmt.Fprintf(&b, "- wall, CPU and peak RSS of each client process come from wait4 in a small launcher (hack/bench/spawn); its floor, measured on `true`, is %.1f MiB peak RSS\n",
		float64(r.baseline.maxRSS)/(1<<20))
	plugin := "built from this tree"
	if r.cfg.plugin != "" {
		plugin = "prebuilt, " + r.cfg.plugin
	}
	checked := "podsync's table compared cell by cell with `kubectl get pods -A` (all but AGE), its JSON pod by pod with `kubectl get pods -A -o json`, and its list requests checked for the fast path"
	switch {
	case !r.cfg.check:
		checked = "not checked (-check=false)"
	case r.cfg.plugin != "":
		checked = "podsync's table compared cell by cell with `kubectl get pods -A` (all but AGE) and its JSON pod by pod with `kubectl get pods -A -o json`"
	}
	for _, c := range r.cfg.compare {
		plugin += fmt.Sprintf("; build %s: %s", c.name, c.path)
	}
	fmt.Fprintf(&b, "- plugin: %s; output before measuring: %s\n\n", plugin, checked)
	for _, s := range r.sizes {
		r.writeSize(&b, s)
	}
	r.writeScaling(&b)
	return b.String()
}

func (r *report) writeSize(b *strings.Builder, s *sizeResult) {
	fmt.Fprintf(b, "#### %d pods\n\n", s.pods)
	if len(s.otherAPIServers) > 0 {
		fmt.Fprintf(b, "Other kube-apiservers running on the machine during this size: %d (pids %v): numbers are noisier.\n\n", len(s.otherAPIServers), s.otherAPIServers)
	} else {
		b.WriteString("No other kube-apiserver was running on the machine.\n\n")
	}
	if s.load.Created > 0 {
		fmt.Fprintf(b, "Loaded %d pods in %s (%.0f pods/s, create and status), Running and Ready %s later.\n\n",
			s.load.Created, s.load.Took.Round(100*time.Millisecond), s.load.Rate, s.load.ReadyWait.Round(100*time.Millisecond))
	}
	w := s.wire
	fmt.Fprintf(b, "One LIST of all pods on the wire: protobuf %s, JSON %s, Table with includeObject=Object %s, =Metadata %s, =None %s.\n\n",
		mb(w.Proto), mb(w.JSON), mb(w.TableObject), mb(w.TableMetadata), mb(w.TableNone))
	if len(s.commands) > 0 {
		floor := s.find("floor")
		b.WriteString("| command | wall s | CPU s | peak RSS MiB | wall vs kubectl | RSS vs kubectl | wall vs floor | RSS vs floor |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, c := range s.commands {
			var kubectl *cmdResult
			switch baseID(c.cmd.id) {
			case "podsync":
				kubectl = s.find("kubectl")
			case "podsync-json":
				kubectl = s.find("kubectl-json")
			}
			vsK, rssK, vsF, rssF := "", "", "", ""
			if kubectl != nil {
				vsK, rssK = ratio(c.wall().median, kubectl.wall().median), ratio(c.rss().median, kubectl.rss().median)
			}
			if floor != nil && c != floor {
				vsF, rssF = ratio(c.wall().median, floor.wall().median), ratio(c.rss().median, floor.rss().median)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.cmd.label,
				spread(c.wall(), "%.2f"), spread(c.cpu(), "%.2f"), spread(c.rss(), "%.0f"), vsK, rssK, vsF, rssF)
		}
		b.WriteString("\n")
		r.writeTargets(b, s)
	}
	for _, c := range s.churn {
		fmt.Fprintf(b, "Churn: `kubectl podsync -A --watch-only -o json` watching %d pods (it watched %s after it started); updates (%s) asked at %g/s for %s.\n\n",
			s.pods, c.WatchReady.Round(100*time.Millisecond), updateMethod[r.cfg.method], c.Rate, c.Duration)
		b.WriteString("| updates sent (rate) | pods updated | lines printed (lines/updates) | lag p50 | lag p99 | lag max | lines >250 ms / >1 s | podsync CPU s (% of a core while the churn lasted) | podsync peak RSS MiB | drain after last update | lost |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
		coalesce := 0.0
		if c.Sent > 0 {
			coalesce = float64(c.Lines) / float64(c.Sent)
		}
		fmt.Fprintf(b, "| %d (%.0f/s, %d failed) | %d | %d (%.3f) | %s | %s | %s | %d / %d | %.2f (%.0f%%) | %.0f | %s | **%d** |\n\n",
			c.Sent, c.Achieved, c.Failed, c.Pods, c.Lines, coalesce, ms(c.P50), ms(c.P99), ms(c.Max), c.Over250ms, c.Over1s,
			c.CPU.Seconds(), 100*c.CPU.Seconds()/c.Elapsed.Seconds(), float64(c.RSS)/(1<<20), ms(c.Drain), c.Lost)
		fmt.Fprintf(b, "Lag is from the moment the loader sent an update to the moment its line reached the bench. Of that, the API server took p50 %s, p99 %s to answer the update; from the answer to the printed line took p50 %s, p99 %s, max %s. CPU per update sent: kube-apiserver %.2f ms, etcd %.2f ms, the bench's loader and reader %.2f ms, podsync %.2f ms.\n\n",
			ms(c.WriteP50), ms(c.WriteP99), ms(c.AfterAckP50), ms(c.AfterAckP99), ms(c.AfterAckMax),
			perUpdate(c.APIServerCPU, c.Sent), perUpdate(c.EtcdCPU, c.Sent), perUpdate(c.BenchCPU, c.Sent), perUpdate(c.CPU, c.Sent))
		for _, ex := range c.LostExamples {
			fmt.Fprintf(b, "- lost: %s\n", ex)
		}
		if len(c.LostExamples) > 0 {
			b.WriteString("\n")
		}
	}
}

var updateMethod = map[string]string{
	"put":   "a protobuf PUT of the whole pod with two annotations changed",
	"patch": "a JSON merge patch of two annotations",
}

func perUpdate(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / float64(n)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) writeTargets(b *strings.Builder, s *sizeResult) {
	ps, k, pj, kj := s.find("podsync"), s.find("kubectl"), s.find("podsync-json"), s.find("kubectl-json")
	var lines []string
	if ps != nil && k != nil {
		wr, rr := ps.wall().median/k.wall().median, ps.rss().median/k.rss().median
		lines = append(lines, fmt.Sprintf("table wall %.2f× kubectl (target ≤ 1.0: %s), peak RSS %.2f× (target ≤ 1.0: %s)", wr, verdict(wr <= 1), rr, verdict(rr <= 1)))
	}
	if pj != nil && kj != nil {
		wr := pj.wall().median / kj.wall().median
		lines = append(lines, fmt.Sprintf("`-o json` wall %.2f× kubectl (target ≤ 0.5: %s)", wr, verdict(wr <= 0.5)))
	}
	for _, c := range s.churn {
		lines = append(lines, fmt.Sprintf("churn at %g/s (%.0f/s reached) p99 %s (target ≤ 250 ms: %s), max %s (target ≤ 1 s: %s), lost %d (%s)",
			c.Rate, c.Achieved, ms(c.P99), verdict(c.P99 <= 250*time.Millisecond), ms(c.Max), verdict(c.Max <= time.Second), c.Lost, verdict(c.Lost == 0)))
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "Targets at %d pods: %s.\n\n", s.pods, strings.Join(lines, "; "))
	}
}

// writeScaling fits peak RSS = a + b·N over the sizes of this run.
func (r *report) writeScaling(b *strings.Builder) {
	if len(r.sizes) < 2 {
		return
	}
	b.WriteString("#### Memory against pod count\n\nLeast-squares line through the median peak RSS of each size: MiB per 1,000 pods and the fixed part.\n\n")
	b.WriteString("| command |")
	for _, s := range r.sizes {
		fmt.Fprintf(b, " %d pods |", s.pods)
	}
	b.WriteString(" MiB per 1,000 pods | fixed MiB |\n|---|")
	for range r.sizes {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, c := range r.sizes[0].commands {
		var xs, ys []float64
		row := "| " + c.cmd.label + " |"
		for _, s := range r.sizes {
			sc := s.find(c.cmd.id)
			if sc == nil {
				row += " — |"
				continue
			}
			xs, ys = append(xs, float64(s.pods)), append(ys, sc.rss().median)
			row += fmt.Sprintf(" %.0f |", sc.rss().median)
		}
		slope, icept := fit(xs, ys)
		fmt.Fprintf(b, "%s %.1f | %.0f |\n", row, slope*1000, icept)
	}
	b.WriteString("\n")
}

func fit(xs, ys []float64) (slope, intercept float64) {
	n := float64(len(xs))
	if n < 2 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, 0
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n
}
