package main

import (
	"fmt"
	"math"
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
	server          serverMemory
	wire            wireSizes
	otherAPIServers []int
	commands        []*cmdResult
	apiMemory       []apiMemory
	// notes say which output checks the memory guard left out.
	notes []string
	churn []*churnResult
	// verdicts are the verdict latency trials, by command and case.
	verdicts []*verdictResult
}

type report struct {
	cfg          *config
	began        time.Time
	took         time.Duration
	machine      machine
	machineAfter machine
	// baseline is what the spawn helper measures for `true`.
	baseline sample
	// apiMethod says how the API server's memory was measured ("": not).
	apiMethod string
	// watchList says why the server does not serve WatchList ("": it does).
	watchList string
	sizes     []*sizeResult
	fleet     *fleetResult
	crs       *crResult
}

func (r *report) lost() int {
	n := 0
	for _, s := range r.sizes {
		for _, c := range s.churn {
			if c.Watcher.isPodsync() {
				n += c.Lost
			}
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

// bestFloor is the floor variant with the lowest median wall time: the
// floor of every ratio at this size.
func (s *sizeResult) bestFloor() *cmdResult {
	var best *cmdResult
	for _, c := range s.commands {
		if c.cmd.isFloor() && !c.cmd.bytes && c.measured() && (best == nil || c.wall().median < best.wall().median) {
			best = c
		}
	}
	return best
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func spread(st stat, format string) string {
	return fmt.Sprintf(format+" ("+format+"–"+format+")", st.median, st.min, st.max)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// shapeWords say what a pod of each -pod-shape holds.
var shapeWords = map[string]string{
	"deployment": "2 containers with env, probes, ports and a volume (-pod-shape deployment, about 6 KB of protobuf as served)",
	"small":      "1 container with requests, no annotations, no service-account token (-pod-shape small, about 2.8 KB of protobuf as served)",
}

func (r *report) markdown() string {
	var b strings.Builder
	m := r.machine
	fmt.Fprintf(&b, "### Run of %s\n\n", r.began.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- command: `bench %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), %.1f GiB memory, Linux %s, %s; load average %s at the start, %s at the end\n",
		m.CPUs, m.CPUModel, m.MemoryGiB, m.Kernel, m.GoVersion, m.Load, r.machineAfter.Load)
	fmt.Fprintf(&b, "- %d runs of each command per size, alternating the commands (order shuffled each round); median (min–max); whole run took %s\n",
		r.cfg.runs, r.took.Round(time.Second))
	if r.cfg.crsOnly {
		fmt.Fprintf(&b, "- wall, CPU and peak RSS of each client process come from wait4 in a small launcher (hack/bench/spawn); its floor, measured on `true`, is %.1f MiB peak RSS\n- plugin: %s\n\n",
			float64(r.baseline.maxRSS)/(1<<20), r.pluginLine())
		r.writeCustomResources(&b)
		return b.String()
	}
	fmt.Fprintf(&b, "- pods: %s, ReplicaSet owner, %d namespaces, %d nodes; statuses written by %s\n",
		shapeWords[r.cfg.shape], r.cfg.namespaces, r.cfg.nodes, r.cfg.status)
	fmt.Fprintf(&b, "- wall, CPU and peak RSS of each client process come from wait4 in a small launcher (hack/bench/spawn); its floor, measured on `true`, is %.1f MiB peak RSS. The launcher reads each client's stdout through a pipe, counts it and notes when the first row (the first byte after the header) arrived\n",
		float64(r.baseline.maxRSS)/(1<<20))
	b.WriteString("- kube-apiserver CPU: the user and system time the API server used while the client ran (/proc/PID/stat): serving it, and anything else it did meanwhile (about 0.05 s a second when idle)\n")
	if r.apiMethod != "" {
		fmt.Fprintf(&b, "- kube-apiserver memory added by a client: %s, minus its VmRSS just before the client started; measured on %d more runs each of podsync (table and -o json), kubectl and the size's floor, after the rounds, alternating, each on a freshly restarted API server; the target compares the medians\n", r.apiMethod, r.cfg.apiMemRuns)
	}
	if r.cfg.live {
		b.WriteString("- pods written: one annotation of one pod before each measured run (-live), as on a cluster whose pods change: the API server then serves a list's later pages from a snapshot of its watch cache; on an idle cluster, once etcd's history is compacted past its last write, it reads them from etcd\n")
	}
	b.WriteString("- floor: protobuf, decoded into typed Pods and thrown away, read each way the server offers (LIST in pages of 500, 1,000, 5,000, 10,000, unpaginated, and a WatchList stream); the fastest at each size is the floor of every ratio\n")
	b.WriteString("- byte floors: a LIST in pages of 5,000 whose answers are read to their end and thrown away, only the continue token decoded: the pods floor asks for protobuf pods, the table floor for the Table kubectl's printing asks for (cells only, includeObject=None); the table is held against the table floor\n")
	if r.watchList != "" {
		fmt.Fprintf(&b, "- WatchList: **not supported by this server** (%s): no stream variant\n", r.watchList)
	}
	if r.cfg.guard {
		budget := ""
		if r.cfg.memBudget > 0 {
			budget = fmt.Sprintf(" (at most %s: -mem-budget)", mib(r.cfg.memBudget))
		}
		fmt.Fprintf(&b, "- memory guard: a command whose estimated peak RSS × %.1f + %s would exceed the memory available%s is not run at that size; the estimate is the line through the smaller sizes of the run, or a default per command\n", guardMargin, mib(guardReserve), budget)
	}
	fmt.Fprintf(&b, "- plugin: %s; output before measuring: %s\n\n", r.pluginLine(), r.checkedLine())
	for _, s := range r.sizes {
		r.writeSize(&b, s)
	}
	r.writeScaling(&b)
	r.writeFleet(&b)
	r.writeCustomResources(&b)
	return b.String()
}

func (r *report) pluginLine() string {
	plugin := "built from this tree"
	if r.cfg.plugin != "" {
		plugin = "prebuilt, " + r.cfg.plugin
	}
	for _, c := range r.cfg.compare {
		plugin += fmt.Sprintf("; build %s: %s", c.name, c.path)
	}
	return plugin
}

func (r *report) checkedLine() string {
	switch {
	case !r.cfg.check:
		return "not checked (-check=false)"
	case r.cfg.plugin != "":
		return "podsync's table compared cell by cell with `kubectl get pods -A` (all but AGE) and its JSON pod by pod with `kubectl get pods -A -o json`"
	}
	return "podsync's table compared cell by cell with `kubectl get pods -A` (all but AGE), its JSON pod by pod with `kubectl get pods -A -o json`, and its list requests checked for the fast path; every measured run printed a row per pod (the floor counted every pod)"
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
	if sv := s.server; sv.apiRSS > 0 {
		fmt.Fprintf(b, "Control plane once loaded: kube-apiserver RSS %s, etcd RSS %s, etcd database %s.\n\n", mib(sv.apiRSS), mib(sv.etcdRSS), mb(sv.etcdDB))
	}
	if w := s.wire; w.Proto > 0 {
		fmt.Fprintf(b, "One LIST of all pods on the wire: protobuf %s, JSON %s, Table with includeObject=Object %s, =Metadata %s, =None %s.\n\n",
			mb(w.Proto), mb(w.JSON), mb(w.TableObject), mb(w.TableMetadata), mb(w.TableNone))
	}
	for _, n := range s.notes {
		fmt.Fprintf(b, "Output check: %s.\n\n", n)
	}
	if len(s.commands) > 0 {
		r.writeCommands(b, s)
		r.writeAPIMemory(b, s)
		r.writeTargets(b, s)
	}
	for _, c := range s.churn {
		r.writeChurn(b, s, c)
	}
	r.writeVerdicts(b, s)
}

// writeVerdicts is a table of the verdict latency trials.
func (r *report) writeVerdicts(b *strings.Builder, s *sizeResult) {
	if len(s.verdicts) == 0 {
		return
	}
	fmt.Fprintf(b, "Verdict latency: `kubectl podsync -A --until ready` over the %d pods while other pods are updated at %g/s; once it watches, one pod not ready at its start turns Ready (exit 0) or its container enters CrashLoopBackOff (exit 4). From the status write sent to the process exited; trials alternate. The floor is the plainest client's wait for the same change: `kubectl wait --for` the decided state, watching that one pod alone (it exits 0 on either).\n\n", s.pods, r.cfg.rates[0])
	b.WriteString("| command | decided by | trials | p50 | p99 | max | start to watching (median) | failed trials |\n|---|---|---|---|---|---|---|---|\n")
	for _, v := range s.verdicts {
		p50, p99, maxD := v.percentiles()
		w, _, _ := percentiles(append([]time.Duration(nil), v.watching...))
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %.1f s | %d |\n", v.label, v.cs.label, len(v.latencies), ms(p50), ms(p99), ms(maxD), w.Seconds(), len(v.failures))
	}
	b.WriteString("\n")
	failed := false
	for _, v := range s.verdicts {
		for _, f := range v.failures {
			fmt.Fprintf(b, "- %s, %s: %s\n", v.label, v.cs.id, f)
			failed = true
		}
	}
	if failed {
		b.WriteString("\n")
	}
}

func (r *report) writeCommands(b *strings.Builder, s *sizeResult) {
	floor := s.bestFloor()
	b.WriteString("| command | wall s | CPU s | kube-apiserver CPU s | peak RSS MiB | first row s | wall vs kubectl | RSS vs kubectl | wall vs floor | RSS vs floor |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range s.commands {
		label := c.cmd.label
		if c == floor {
			label += " **(floor)**"
		}
		if !c.measured() {
			fmt.Fprintf(b, "| %s | %s | | | | | | | | |\n", label, c.skipped)
			continue
		}
		var kubectl *cmdResult
		switch baseID(c.cmd.id) {
		case "podsync":
			kubectl = s.find("kubectl")
		case "podsync-json":
			kubectl = s.find("kubectl-json")
		}
		vsK, rssK, vsF, rssF := "", "", "", ""
		if kubectl != nil && kubectl.measured() {
			vsK, rssK = ratio(c.wall().median, kubectl.wall().median), ratio(c.rss().median, kubectl.rss().median)
		}
		if floor != nil && !c.cmd.isFloor() {
			vsF, rssF = ratio(c.wall().median, floor.wall().median), ratio(c.rss().median, floor.rss().median)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label,
			spread(c.wall(), "%.2f"), spread(c.cpu(), "%.2f"), apiCPUCell(c), spread(c.rss(), "%.0f"),
			firstRowCell(c), vsK, rssK, vsF, rssF)
	}
	b.WriteString("\n")
	if floor != nil {
		fmt.Fprintf(b, "Floor at %d pods: %s, the fastest of the floor variants (median wall %.2f s, peak RSS %.0f MiB); every \"vs floor\" ratio is against it.\n\n",
			s.pods, floor.cmd.label, floor.wall().median, floor.rss().median)
	}
}

func apiCPUCell(c *cmdResult) string {
	for _, s := range c.samples {
		if s.apiCPU < 0 {
			return "—"
		}
	}
	return spread(c.apiCPU(), "%.2f")
}

func firstRowCell(c *cmdResult) string {
	if c.cmd.out != outTable && c.cmd.out != outLines {
		return "—"
	}
	for _, s := range c.samples {
		if s.firstRow < 0 {
			return "—"
		}
	}
	return spread(c.firstRow(), "%.2f")
}

// writeAPIMemory is the API server's cost of serving each run of a client.
func (r *report) writeAPIMemory(b *strings.Builder, s *sizeResult) {
	if len(s.apiMemory) == 0 {
		return
	}
	b.WriteString("kube-apiserver memory while each further run of a client was served, every run on a freshly restarted API server (watch cache filled, resident set settled): its RSS before, its peak while the client ran, and what the client added.\n\n")
	b.WriteString("| command | run | kube-apiserver RSS before MiB | peak MiB | added MiB |\n|---|---|---|---|---|\n")
	for _, a := range s.apiMemory {
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.0f |\n", a.cmd.label, a.run, float64(a.idle)/(1<<20), float64(a.peak)/(1<<20), a.addedMiB())
	}
	b.WriteString("\n")
}

// apiMemoryOf is what the runs of a command added to the API server: the
// median and the spread in MiB, and the label of the command.
func (s *sizeResult) apiMemoryOf(id string) (stat, string, bool) {
	var added []float64
	var label string
	for _, a := range s.apiMemory {
		if a.cmd.id == id {
			added, label = append(added, a.addedMiB()), a.cmd.label
		}
	}
	return statOfValues(added), label, len(added) > 0
}

func (r *report) writeChurn(b *strings.Builder, s *sizeResult, c *churnResult) {
	if c.Sent == 0 && c.NotRun != "" {
		fmt.Fprintf(b, "Churn: %s at %g/s: not measured, %s.\n\n", c.Watcher.label, c.Rate, c.NotRun)
		return
	}
	fmt.Fprintf(b, "Churn: %s watching %d pods (it watched %s after it started); updates (%s) asked at %g/s for %s, from %s after the list of the pods' states before, once the API server used under %s of CPU in a second.\n\n",
		c.Watcher.label, s.pods, c.WatchReady.Round(100*time.Millisecond), updateMethod[r.cfg.method], c.Rate, c.Duration,
		c.Settled.Round(time.Second), settleCPU)
	if c.NotRun != "" {
		fmt.Fprintf(b, "It %s.\n\n", c.NotRun)
	}
	b.WriteString("| updates sent (rate) | pods updated | lines printed (lines/updates) | lag p50 | lag p99 | lag max | lines >250 ms / >1 s | CPU s (% of a core while the churn lasted) | CPU per printed line | peak RSS MiB | drain after last update | lost |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	coalesce := 0.0
	if c.Sent > 0 {
		coalesce = float64(c.Lines) / float64(c.Sent)
	}
	fmt.Fprintf(b, "| %d (%.0f/s, %d failed) | %d | %d (%.3f) | %s | %s | %s | %d / %d | %.2f (%.0f%%) | %.3f ms | %.0f | %s | **%d** |\n\n",
		c.Sent, c.Achieved, c.Failed, c.Pods, c.Lines, coalesce, ms(c.P50), ms(c.P99), ms(c.Max), c.Over250ms, c.Over1s,
		c.CPU.Seconds(), 100*c.CPU.Seconds()/c.Elapsed.Seconds(), perUpdate(c.CPU, c.Lines), float64(c.RSS)/(1<<20), ms(c.Drain), c.Lost)
	fmt.Fprintf(b, "Lag is from the moment the loader sent an update to the moment its line reached the bench. Of that, the API server took p50 %s, p99 %s to answer the update; from the answer to the printed line took p50 %s, p99 %s, max %s. CPU per update sent: kube-apiserver %.2f ms, etcd %.2f ms, the bench's loader and reader %.2f ms, %s %.2f ms.\n\n",
		ms(c.WriteP50), ms(c.WriteP99), ms(c.AfterAckP50), ms(c.AfterAckP99), ms(c.AfterAckMax),
		perUpdate(c.APIServerCPU, c.Sent), perUpdate(c.EtcdCPU, c.Sent), perUpdate(c.BenchCPU, c.Sent), c.Watcher.id, perUpdate(c.CPU, c.Sent))
	for _, ex := range c.LostExamples {
		fmt.Fprintf(b, "- lost: %s\n", ex)
	}
	if len(c.LostExamples) > 0 {
		b.WriteString("\n")
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

// target is one row of a size's target table.
type target struct{ name, measured, verdict string }

func (r *report) writeTargets(b *strings.Builder, s *sizeResult) {
	rows := append(commandTargets(s, r.cfg.compare), churnTargets(s)...)
	rows = append(rows, verdictTargets(s, r.cfg.rates[0])...)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "Targets at %d pods:\n\n| target | measured | |\n|---|---|---|\n", s.pods)
	for _, t := range rows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.name, t.measured, t.verdict)
	}
	b.WriteString("\n")
}

// measuredAt returns the commands of ids, or nil if any is not measured.
func measuredAt(s *sizeResult, ids ...string) []*cmdResult {
	var out []*cmdResult
	for _, id := range ids {
		c := s.find(id)
		if c == nil || !c.measured() {
			return nil
		}
		out = append(out, c)
	}
	return out
}

// listingTarget is what a listing command must meet at every size.
type listingTarget struct {
	id, name   string
	wall, rssK float64
}

var listingTargets = []listingTarget{
	{"podsync", "`podsync -A --once`", 1.25, 6},
	{"podsync-json", "`podsync -A --once -o json`", 1.4, 10},
}

// commandTargets are the listing targets of this tree and, beside them,
// of each -compare build, so that a before/after run shows both.
func commandTargets(s *sizeResult, builds []build) []target {
	var rows []target
	for _, t := range listingTargets {
		rows = append(rows, listingRows(s, t, "")...)
		for _, b := range builds {
			rows = append(rows, listingRows(s, t, b.name)...)
		}
	}
	rows = append(rows, byteFloorTargets(s, builds)...)
	rows = append(rows, firstRowTargets(s, builds)...)
	return append(rows, apiMemoryTargets(s)...)
}

// idOf is the id of command id run from build ("": this tree), and
// suffix the words that name the build in a target.
func idOf(id, build string) (string, string) {
	if build == "" {
		return id, ""
	}
	return id + "@" + build, ", build " + build
}

func listingRows(s *sizeResult, t listingTarget, build string) []target {
	id, suffix := idOf(t.id, build)
	cs := measuredAt(s, id)
	if cs == nil {
		return nil
	}
	c, floor := cs[0], s.bestFloor()
	var rows []target
	if floor != nil {
		w := c.wall().median / floor.wall().median
		rows = append(rows, target{fmt.Sprintf("%s%s wall ≤ %.2f× the floor's", t.name, suffix, t.wall),
			fmt.Sprintf("%.2f× (%.2f s against %.2f s)", w, c.wall().median, floor.wall().median), verdict(w <= t.wall)})
	}
	perK := c.rss().median * 1000 / float64(s.pods)
	return append(rows, target{fmt.Sprintf("%s%s peak RSS ≤ %.0f MiB per 1,000 pods", t.name, suffix, t.rssK),
		fmt.Sprintf("%.1f (%.0f MiB)", perK, c.rss().median), verdict(perK <= t.rssK)})
}

// byteFloorTargets hold the table against the table floor, the bytes of
// the cells kubectl's printing asks for, and show -o json against the pods
// floor, the bytes of every pod.
func byteFloorTargets(s *sizeResult, builds []build) []target {
	var rows []target
	for _, b := range append([]build{{}}, builds...) {
		id, suffix := idOf("podsync", b.name)
		if cs := measuredAt(s, id, "bytes-table"); cs != nil {
			w := cs[0].wall().median / cs[1].wall().median
			rows = append(rows, target{"`podsync -A --once`" + suffix + " wall ≤ 1.25× the table floor's",
				fmt.Sprintf("%.2f× (%.2f s against %.2f s)", w, cs[0].wall().median, cs[1].wall().median), verdict(w <= 1.25)})
		}
		id, suffix = idOf("podsync-json", b.name)
		if cs := measuredAt(s, id, "bytes-pods"); cs != nil {
			w := cs[0].wall().median / cs[1].wall().median
			rows = append(rows, target{"`podsync -A --once -o json`" + suffix + " wall against the pods floor's (no target)",
				fmt.Sprintf("%.2f× (%.2f s against %.2f s)", w, cs[0].wall().median, cs[1].wall().median), "—"})
		}
	}
	return rows
}

func firstRowTargets(s *sizeResult, builds []build) []target {
	var rows []target
	for _, b := range append([]build{{}}, builds...) {
		id, suffix := idOf("podsync", b.name)
		if cs := measuredAt(s, id, "kubectl"); cs != nil {
			p, k := cs[0].firstRow().median, cs[1].firstRow().median
			rows = append(rows, target{"time to the first SYNC row ≤ 1.5 s and ≤ kubectl's first row" + suffix,
				fmt.Sprintf("%.2f s (kubectl %.2f s)", p, k), verdict(p <= 1.5 && p <= k)})
		}
	}
	return rows
}

// apiMemoryTargets hold what podsync adds to the API server against what
// the size's floor adds, measured in the same run: reading every pod
// quickly costs the server that much whoever reads them.
func apiMemoryTargets(s *sizeResult) []target {
	floor := s.bestFloor()
	if floor == nil {
		return nil
	}
	fa, _, ok := s.apiMemoryOf(floor.cmd.id)
	if !ok {
		return nil
	}
	kubectl := ""
	if ka, _, ok := s.apiMemoryOf("kubectl"); ok {
		kubectl = fmt.Sprintf("; kubectl +%s MiB", spread(ka, "%.0f"))
	}
	var rows []target
	for _, id := range []string{"podsync", "podsync-json"} {
		pa, label, ok := s.apiMemoryOf(id)
		if !ok {
			continue
		}
		limit := math.Max(fa.median, 0) * 1.1
		rows = append(rows, target{fmt.Sprintf("kube-apiserver memory added by `%s` ≤ the floor's + 10 %% (medians)", strings.TrimPrefix(strings.Trim(label, "`"), "kubectl ")),
			fmt.Sprintf("+%s MiB (the floor +%s MiB, limit %.0f%s)", spread(pa, "%.0f"), spread(fa, "%.0f"), limit, kubectl), verdict(pa.median <= limit)})
	}
	return rows
}

// churnTargets hold podsync's watch against the floor's watch under the
// same churn in the same run: on a small machine the floor itself misses
// any absolute number.
func churnTargets(s *sizeResult) []target {
	var rows []target
	for _, c := range s.churn {
		if !c.Watcher.isPodsync() {
			continue
		}
		f := s.floorChurn(c.Rate)
		if f == nil {
			rows = append(rows, target{fmt.Sprintf("churn at %g/s against the floor's watch", c.Rate), "the floor's watch was not measured (-churn-peers)", "—"})
			continue
		}
		cpu, fcpu := perUpdate(c.CPU, c.Lines), perUpdate(f.CPU, f.Lines)
		rows = append(rows,
			target{fmt.Sprintf("churn at %g/s: CPU per update ≤ 1.25× the floor's watch", c.Rate),
				fmt.Sprintf("%.3f against %.3f ms: %s", cpu, fcpu, ratio(cpu, fcpu)), verdict(c.Lines > 0 && fcpu > 0 && cpu <= 1.25*fcpu)},
			target{fmt.Sprintf("churn at %g/s: lag p99 ≤ the floor's watch p99 + 25 ms, nothing lost", c.Rate),
				fmt.Sprintf("p99 %s against %s, lost %d", ms(c.P99), ms(f.P99), c.Lost),
				verdict(c.P99 <= f.P99+25*time.Millisecond && c.Lost == 0)})
	}
	return rows
}

// floorChurn is the floor's watch measured at rate, or nil.
func (s *sizeResult) floorChurn(rate float64) *churnResult {
	for _, c := range s.churn {
		if c.Watcher.id == "floor" && c.Rate == rate && c.Lines > 0 {
			return c
		}
	}
	return nil
}

// verdictTargets: p99 ≤ 100 ms from the deciding change to the exit, for
// this tree, beside the floor's p99 of the same case.
func verdictTargets(s *sizeResult, rate float64) []target {
	var rows []target
	for _, v := range s.verdicts {
		if v.build != "" || v.wait {
			continue
		}
		p50, p99, maxD := v.percentiles()
		floor := ""
		if f := s.floorVerdict(v.cs.id); f != nil {
			_, fp99, _ := f.percentiles()
			floor = fmt.Sprintf("; the floor's p99 %s", ms(fp99))
		}
		rows = append(rows, target{fmt.Sprintf("verdict latency at %g/s, %s: p99 ≤ 100 ms", rate, v.cs.label),
			fmt.Sprintf("p99 %s (p50 %s, max %s, %d trials, %d failed%s)", ms(p99), ms(p50), ms(maxD), len(v.latencies), len(v.failures), floor),
			verdict(len(v.latencies) > 0 && len(v.failures) == 0 && p99 <= 100*time.Millisecond)})
	}
	return rows
}

// floorVerdict is the floor's trials of a case, or nil when none passed.
func (s *sizeResult) floorVerdict(id string) *verdictResult {
	for _, v := range s.verdicts {
		if v.wait && v.cs.id == id && len(v.latencies) > 0 {
			return v
		}
	}
	return nil
}

// growthRow is one command's peak RSS at each size of the run.
type growthRow struct {
	label string
	cells []string
	pts   []point
}

// growthRows has a row per command, in the order first measured, and one
// for the floor of each size.
func (r *report) growthRows() []growthRow {
	var rows []growthRow
	index := map[string]int{}
	floor := growthRow{label: "floor (the fastest variant at each size)"}
	for i, s := range r.sizes {
		for _, c := range s.commands {
			k, ok := index[c.cmd.id]
			if !ok {
				k, index[c.cmd.id] = len(rows), len(rows)
				rows = append(rows, growthRow{label: c.cmd.label, cells: make([]string, len(r.sizes))})
			}
			rows[k].cells[i] = "—"
			switch {
			case c.measured():
				rows[k].cells[i] = fmt.Sprintf("%.0f", c.rss().median)
				rows[k].pts = append(rows[k].pts, point{s.pods, c.rss().median})
			case c.skipped != "":
				rows[k].cells[i] = "does not fit"
			}
		}
		cell := "—"
		if f := s.bestFloor(); f != nil {
			cell = fmt.Sprintf("%.0f (%s)", f.rss().median, strings.TrimPrefix(f.cmd.label, "floor: protobuf "))
			floor.pts = append(floor.pts, point{s.pods, f.rss().median})
		}
		floor.cells = append(floor.cells, cell)
	}
	return append(rows, floor)
}

// projection is the peak RSS at the largest size as the line through the
// smaller sizes predicts it, and as measured.
func projection(pts []point, largest int) (predicted, measured float64, ok bool) {
	if len(pts) < 3 || pts[len(pts)-1].pods != largest {
		return 0, 0, false
	}
	slope, icept, ok := fitPoints(pts[:len(pts)-1])
	return icept + slope*float64(largest), pts[len(pts)-1].mib, ok
}

// writeScaling fits peak RSS = a + b·N over the sizes of this run.
func (r *report) writeScaling(b *strings.Builder) {
	if len(r.sizes) < 2 {
		return
	}
	largest := r.sizes[len(r.sizes)-1].pods
	b.WriteString("#### Memory against pod count\n\nLeast-squares line through the median peak RSS of each size: MiB per 1,000 pods and the fixed part; and the peak RSS at the largest size as the line through the smaller sizes projects it (needs two smaller sizes), against the measured one.\n\n")
	b.WriteString("| command |")
	for _, s := range r.sizes {
		fmt.Fprintf(b, " %d pods |", s.pods)
	}
	fmt.Fprintf(b, " MiB per 1,000 pods | fixed MiB | projected at %d from the smaller sizes | measured |\n|---|", largest)
	b.WriteString(strings.Repeat("---|", len(r.sizes)+4) + "\n")
	var verdicts []string
	for _, row := range r.growthRows() {
		slope, icept, ok := fitPoints(row.pts)
		fitCells := "— | —"
		if ok {
			fitCells = fmt.Sprintf("%.1f | %.0f", slope*1000, icept)
		}
		projCells := "— | —"
		if p, m, ok := projection(row.pts, largest); ok {
			projCells = fmt.Sprintf("%.0f | %.0f (%+.0f%%)", p, m, 100*(m-p)/math.Max(p, 1))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", row.label, strings.Join(row.cells, " | "), fitCells, projCells)
		if limit, has := growthTargets[row.label]; has && ok {
			verdicts = append(verdicts, fmt.Sprintf("%s grows %.1f MiB per 1,000 pods (target ≤ %.0f: %s)", row.label, slope*1000, limit, verdict(slope*1000 <= limit)))
		}
	}
	b.WriteString("\n")
	if len(verdicts) > 0 {
		fmt.Fprintf(b, "Growth targets: %s.\n\n", strings.Join(verdicts, "; "))
	}
}

// growthTargets are the targets in MiB per 1,000 pods, by command label.
var growthTargets = map[string]float64{
	"`kubectl podsync -A --once`":         6,
	"`kubectl podsync -A --once -o json`": 10,
}
