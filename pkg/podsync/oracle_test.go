package podsync_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/podsync"
)

// truth is what really happened to each pod name: its incarnations (a new
// UID each), in order, and each incarnation's states by resourceVersion.
type truth struct {
	mu    sync.Mutex
	keys  map[string][]*podRecord
	extra int
}

type podRecord struct {
	inc     int
	states  []stateRecord
	deleted bool
	// initial: this incarnation was in the run's initial list; initialRV
	// is its state in the first list that succeeded, if it was there.
	initial   bool
	initialRV string
}

type stateRecord struct {
	rv    string
	state podState
}

func newTruth() *truth { return &truth{keys: map[string][]*podRecord{}} }

// put writes a new state of key to the sim: a new incarnation when the
// name is free, else the next state of the current one.
func (t *truth) put(s *sim, key string, st podState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns, name, _ := strings.Cut(key, "/")
	recs := t.keys[key]
	var cur *podRecord
	if n := len(recs); n > 0 && !recs[n-1].deleted {
		cur = recs[n-1]
	} else {
		cur = &podRecord{inc: n + 1}
		t.keys[key] = append(recs, cur)
	}
	t.extra++
	s.put(newSimPod(ns, name, cur.inc, st, strconv.Itoa(t.extra)))
	cur.states = append(cur.states, stateRecord{rv: s.get(key).Labels["rv"], state: st})
}

func (t *truth) remove(s *sim, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.remove(key)
	recs := t.keys[key]
	recs[len(recs)-1].deleted = true
}

// markInitial notes the incarnations that a run may print as SYNC: those
// the sim's lists showed, up to the first list that succeeded.
func (t *truth) markInitial(s *sim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, recs := range t.keys {
		for _, r := range recs {
			var listed string
			r.initial, listed = s.maySync(key, r.inc)
			r.initialRV = ""
			if inc, rv, _ := strings.Cut(listed, "/"); inc == strconv.Itoa(r.inc) {
				r.initialRV = rv
			}
		}
	}
}

func (t *truth) incarnation(key string, inc int) *podRecord {
	for _, r := range t.keys[key] {
		if r.inc == inc {
			return r
		}
	}
	return nil
}

// failed: a state of some pod that fails a check with the default
// --fail-on reasons.
func (t *truth) everFailed() bool {
	for key, recs := range t.keys {
		for _, r := range recs {
			for _, s := range r.states {
				if key != sentinel && (s.state == crashLooping || s.state == failedPhase) {
					return true
				}
			}
		}
	}
	return false
}

// obs is one printed message as far as its format shows it: kind "" when
// the format does not show it; inc 0 and rv "" when it shows no state.
type obs struct {
	kind string
	key  string
	inc  int
	rv   string
}

func (o obs) String() string {
	return fmt.Sprintf("%s %s inc=%d rv=%s", o.kind, o.key, o.inc, o.rv)
}

// parse reads the printed stream back into messages.
func parse(h *history, text string) ([]obs, error) {
	switch h.format {
	case "json":
		return parseJSON(text)
	case "yaml":
		return parseYAML(text)
	case "name":
		return parseName(text)
	case "table", "wide":
		return parseTable(h, text)
	}
	return parseFields(text)
}

type eventDoc struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Namespace string            `json:"namespace"`
			Name      string            `json:"name"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	} `json:"object"`
}

func (d eventDoc) obs() (obs, error) {
	m := d.Object.Metadata
	inc, err := strconv.Atoi(m.Labels["inc"])
	if err != nil {
		return obs{}, fmt.Errorf("message %+v: bad inc label: %w", d, err)
	}
	return obs{kind: d.Type, key: m.Namespace + "/" + m.Name, inc: inc, rv: m.Labels["rv"]}, nil
}

func parseJSON(text string) ([]obs, error) {
	var out []obs
	for _, line := range lines(text) {
		var d eventDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		o, err := d.obs()
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func parseYAML(text string) ([]obs, error) {
	var out []obs
	for _, doc := range strings.Split(text, "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var d eventDoc
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			return nil, fmt.Errorf("document %q: %w", doc, err)
		}
		o, err := d.obs()
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

var namePattern = regexp.MustCompile(`^pod/(\S+) (synced|added|updated|gone)$`)

var verbKinds = map[string]string{"synced": "SYNC", "added": "ADD", "updated": "UPDATE", "gone": "GONE"}

func parseName(text string) ([]obs, error) {
	var out []obs
	for _, line := range lines(text) {
		m := namePattern.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %q is not pod/NAME VERB", line)
		}
		out = append(out, obs{kind: verbKinds[m[2]], key: "a/" + m[1]})
	}
	return out, nil
}

// parseTable reads rows by their fields: no cell of the sim's pods holds a
// space, and CHANGES, which may, is last.
func parseTable(h *history, text string) ([]obs, error) {
	var out []obs
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if f[0] == "EVENT" {
			continue
		}
		ns := "a"
		if h.allNamespaces() {
			ns, f = f[1], append(f[:1:1], f[2:]...)
		}
		// EVENT NAME READY STATUS RESTARTS AGE [IP NODE NOMINATED GATES] INC RV
		at := 6
		if h.format == "wide" {
			at = 10
		}
		if len(f) < at+2 {
			return nil, fmt.Errorf("row %q has too few cells", line)
		}
		inc, err := strconv.Atoi(f[at])
		if err != nil {
			return nil, fmt.Errorf("row %q: bad INC: %w", line, err)
		}
		out = append(out, obs{kind: f[0], key: ns + "/" + f[1], inc: inc, rv: f[at+1]})
	}
	return out, nil
}

// parseFields reads NAMESPACE NAME INC RV lines (templates and custom
// columns), which show no kind.
func parseFields(text string) ([]obs, error) {
	var out []obs
	for _, line := range lines(text) {
		f := strings.Fields(line)
		if f[0] == "NS" {
			continue // the custom-columns header
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %q: want NAMESPACE NAME INC RV", line)
		}
		inc, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %q: bad inc: %w", line, err)
		}
		out = append(out, obs{key: f[0] + "/" + f[1], inc: inc, rv: f[3]})
	}
	return out, nil
}

func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// showsKinds: the format prints each message's kind.
func (h *history) showsKinds() bool {
	switch h.format {
	case "go-template", "jsonpath", "custom-columns", "strict-template":
		return false
	}
	return true
}

// byKey splits the messages per pod name, in printed order.
func byKey(all []obs) map[string][]obs {
	out := map[string][]obs{}
	for _, o := range all {
		out[o.key] = append(out[o.key], o)
	}
	return out
}

// finalGaps lists the pods whose final state the stream does not show: a
// pod that exists last printed with its current state (or, with
// --watch-only, never printed and unchanged since the list), a deleted pod
// last printed GONE (or never printed). With the sentinel gone too
// (sentinelGone), it must be GONE.
func finalGaps(h *history, t *truth, all []obs, sentinelGone bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	printed := byKey(all)
	var gaps []string
	for key, recs := range t.keys {
		if key == sentinel && !sentinelGone {
			continue
		}
		if gap := finalGap(h, recs[len(recs)-1], printed[key]); gap != "" {
			gaps = append(gaps, key+": "+gap)
		}
	}
	return gaps
}

func finalGap(h *history, last *podRecord, msgs []obs) string {
	final := last.states[len(last.states)-1].rv
	// With --watch-only a pod unchanged since the list may print nothing.
	hidden := h.watchOnly && !last.deleted && final == last.initialRV
	if len(msgs) == 0 {
		unprintable := h.format == "strict-template" && !printable(last.states[len(last.states)-1].state)
		if last.deleted || hidden || unprintable {
			return ""
		}
		return "never printed"
	}
	m := msgs[len(msgs)-1]
	if hidden {
		return ""
	}
	if h.format == "strict-template" && !last.deleted && !printable(last.states[len(last.states)-1].state) {
		return "" // its final state cannot be printed; it is judged all the same
	}
	switch {
	case last.deleted && (m.kind == "GONE" || m.kind == ""):
		// Without kinds a GONE looks like any other message; and a pod
		// created and deleted while the watch was cut is never seen.
		return ""
	case last.deleted:
		return fmt.Sprintf("deleted, but last printed as %s", m)
	case m.kind == "GONE":
		return fmt.Sprintf("exists (inc %d rv %s), but last printed as %s", last.inc, final, m)
	case m.rv != "" && (m.inc != last.inc || m.rv != final):
		return fmt.Sprintf("is at inc %d rv %s, but last printed as %s", last.inc, final, m)
	}
	return ""
}

// checkRun holds a played history's stream and outcome against the truth:
//   - every printed state existed, for its name and incarnation;
//   - a name's messages come in the order of its history, an incarnation's
//     states strictly increasing, with no repeat unless it is the GONE;
//   - a new incarnation (a new UID) is only printed after the GONE of the
//     one before it, and opens with ADD (SYNC for the initial list);
//   - no message follows an incarnation's GONE; SYNC only for pods of the
//     initial list, at most once, never with --watch-only;
//   - once settled, the final state of every pod is printed (finalGaps);
//   - the summary counts each printed kind once;
//   - the exit code is the verdict of the true final state.
func checkRun(r *result) []string {
	all, err := parse(r.h, r.stdout)
	if err != nil {
		return []string{"cannot read the output: " + err.Error()}
	}
	var bad []string
	for key, msgs := range byKey(all) {
		bad = append(bad, r.checkKey(key, msgs)...)
	}
	if !r.early {
		if !r.settled {
			bad = append(bad, "the stream never showed the final state")
		}
		for _, g := range finalGaps(r.h, r.truth, all, r.h.check) {
			bad = append(bad, "final state: "+g)
		}
	}
	bad = append(bad, r.checkCounts(all)...)
	bad = append(bad, r.checkPrintErrors()...)
	return append(bad, r.checkVerdict()...)
}

// checkPrintErrors: with the strict template, a pod whose final state
// cannot be printed has its print failure said on stderr, once per
// message, in one line naming the pod.
func (r *result) checkPrintErrors() []string {
	if r.h.format != "strict-template" || r.early {
		return nil
	}
	var bad []string
	for key, recs := range r.truth.keys {
		last := recs[len(recs)-1]
		st := last.states[len(last.states)-1]
		quiet := r.h.watchOnly && st.rv == last.initialRV
		if last.deleted || printable(st.state) || quiet {
			continue
		}
		re := regexp.MustCompile(`(?m)^error: print (SYNC|ADD|UPDATE|GONE) ` + regexp.QuoteMeta(key) + `: .*"printable"`)
		if !re.MatchString(r.stderr) {
			bad = append(bad, fmt.Sprintf("%s: its final state cannot be printed, and stderr does not say so", key))
		}
	}
	return bad
}

// checkKey applies the per-name rules to one name's messages.
func (r *result) checkKey(key string, msgs []obs) []string {
	var bad []string
	recs := r.truth.keys[key]
	if recs == nil {
		return []string{fmt.Sprintf("%s: printed, but no such pod ever existed", key)}
	}
	kinds := r.h.showsKinds()
	states := r.h.format != "name"
	var prev *obs
	prevIdx := [2]int{-1, -1}
	goneInc := map[int]bool{}
	repeated := false
	for i := range msgs {
		m := &msgs[i]
		idx := [2]int{0, 0}
		if states {
			rec := r.truth.incarnation(key, m.inc)
			vi := -1
			if rec != nil {
				for j, s := range rec.states {
					if s.rv == m.rv {
						vi = j
					}
				}
			}
			if vi < 0 {
				bad = append(bad, fmt.Sprintf("%s: printed a state that never existed: %s", key, m))
				continue
			}
			idx = [2]int{m.inc, vi}
			bad = append(bad, order(key, prev, m, prevIdx, idx, kinds, repeated)...)
			repeated = prev != nil && idx == prevIdx
			if goneInc[m.inc] && m.kind != "" {
				bad = append(bad, fmt.Sprintf("%s: %s after the GONE of incarnation %d", key, m, m.inc))
			}
		}
		if kinds {
			bad = append(bad, r.checkKind(key, prev, m, i)...)
			if m.kind == "GONE" {
				goneInc[m.inc] = true
			}
		}
		prev, prevIdx = m, idx
	}
	return bad
}

// order: states move forward; the same state again only as the GONE
// (where the format shows no kind, a state may show twice in a row, but
// not three times); a new incarnation only after the GONE of the previous
// one.
func order(key string, prev, m *obs, pi, i [2]int, kinds, repeated bool) []string {
	if prev == nil {
		return nil
	}
	switch {
	case i[0] < pi[0] || i[0] == pi[0] && i[1] < pi[1]:
		return []string{fmt.Sprintf("%s: out of order: %s after %s", key, m, prev)}
	case i == pi && (kinds && (m.kind != "GONE" || prev.kind == "GONE") || !kinds && repeated):
		return []string{fmt.Sprintf("%s: the same state again without a change: %s after %s", key, m, prev)}
	case i[0] > pi[0] && kinds && prev.kind != "GONE":
		return []string{fmt.Sprintf("%s: a new pod (incarnation %d) printed as %s without the GONE of incarnation %d (last %s)", key, m.inc, m.kind, prev.inc, prev)}
	}
	return nil
}

// checkKind: which kind may open an incarnation, and which may follow.
func (r *result) checkKind(key string, prev, m *obs, i int) []string {
	newInc := prev == nil || prev.inc != m.inc || m.inc == 0 && prev.kind == "GONE"
	rec := r.truth.incarnation(key, m.inc)
	initial := m.inc == 0 && r.anyInitial(key) || rec != nil && rec.initial
	switch {
	case m.kind == "SYNC" && r.h.watchOnly:
		return []string{fmt.Sprintf("%s: SYNC printed with --watch-only", key)}
	case m.kind == "SYNC" && (!initial || !newInc):
		return []string{fmt.Sprintf("%s: SYNC for a pod that was not in the initial list, or not first: %s", key, m)}
	case newInc && m.kind == "UPDATE" && (!initial || !r.h.watchOnly):
		return []string{fmt.Sprintf("%s: a pod first printed as UPDATE: %s", key, m)}
	case !newInc && m.kind == "ADD":
		return []string{fmt.Sprintf("%s: ADD for a pod printed before: %s after %s", key, m, prev)}
	case newInc && m.kind == "ADD" && initial && i == 0:
		return []string{fmt.Sprintf("%s: a pod of the initial list printed as ADD: %s", key, m)}
	}
	return nil
}

// anyInitial: some incarnation of key may be printed as SYNC (for -o name,
// which shows no incarnation).
func (r *result) anyInitial(key string) bool {
	for _, rec := range r.truth.keys[key] {
		if rec.initial {
			return true
		}
	}
	return false
}

var eventsLine = regexp.MustCompile(`(?m)^Events:   SYNC (\d+), ADD (\d+), UPDATE (\d+), GONE (\d+)$`)

// checkCounts: the summary counts each printed message once.
func (r *result) checkCounts(all []obs) []string {
	if !r.h.showsKinds() {
		return nil
	}
	// Every played run ends with a summary: a check's verdict, or the
	// end the test gives it as --timeout would.
	m := eventsLine.FindStringSubmatch(r.stderr)
	if m == nil {
		return []string{"no Events line in the summary: " + r.stderr}
	}
	printed := map[string]int{}
	for _, o := range all {
		printed[o.kind]++
	}
	var bad []string
	for i, k := range []string{"SYNC", "ADD", "UPDATE", "GONE"} {
		n, _ := strconv.Atoi(m[i+1])
		if k == "SYNC" && r.h.watchOnly {
			continue
		}
		if n != printed[k] {
			bad = append(bad, fmt.Sprintf("summary counts %s %d, the stream printed %d", k, n, printed[k]))
		}
	}
	return bad
}

// checkVerdict: the exit code is what the true final state says. A run
// that failed fast needs a failure that really happened; a failure in the
// final state must fail it; otherwise it is met exactly when the final
// state (the sentinel gone) meets the check (see finalVerdict).
func (r *result) checkVerdict() []string {
	code := r.outcome.ExitCode()
	if !r.h.check {
		if code != podsync.ExitOK {
			return []string{fmt.Sprintf("a stream without a check ended %d (%+v)", code, r.outcome)}
		}
		return nil
	}
	failedEver, failedNow, met := r.truth.everFailed(), false, false
	if !r.early {
		failedNow, met = r.finalVerdict()
	}
	switch {
	case code == podsync.ExitFailed && !failedEver:
		return []string{"exit 4, but no pod ever failed"}
	case code == podsync.ExitFailed:
		return nil
	case failedNow:
		return []string{fmt.Sprintf("exit %d, but a pod has failed", code)}
	case met && code != podsync.ExitOK:
		return []string{fmt.Sprintf("exit %d, but the final state meets the check", code)}
	case !met && code != podsync.ExitNotMet:
		return []string{fmt.Sprintf("exit %d, but the check is not met", code)}
	}
	return nil
}

// finalVerdict judges the true final state as the history's check with
// the default --fail-on does: --until ready is met when every counted pod
// (pods being deleted aside) is ready and at least --min-pods (1 when not
// given) are counted; --until gone when no pod is left, being deleted or
// not, and --min-pods does not change that.
func (r *result) finalVerdict() (failed, met bool) {
	counted, ready, present := 0, 0, 0
	for key, recs := range r.truth.keys {
		last := recs[len(recs)-1]
		if key == sentinel || last.deleted {
			continue
		}
		present++
		switch last.states[len(last.states)-1].state {
		case terminating:
			continue
		case crashLooping, failedPhase:
			failed = true
		case runningReady:
			ready++
		}
		counted++
	}
	if r.h.until == "gone" {
		return failed, present == 0
	}
	want := r.h.minPods
	if want == check.Unset {
		want = 1
	}
	return failed, ready == counted && counted >= want
}
