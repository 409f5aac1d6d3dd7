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
// UID each), in order, and each incarnation's states by resourceVersion;
// with targets, which revision each workload rolls out.
type truth struct {
	mu    sync.Mutex
	h     *history
	keys  map[string][]*podRecord
	extra int
	// owner of each key (targets), and the revision each workload rolls
	// out now.
	owner   map[string]string
	current map[string]int
	// ctrl: without targets, what controls each key's pods (see
	// history.controllers); leftEver: the keys whose pod was left behind
	// at some moment (see leftBehindState).
	ctrl     map[string]string
	leftEver map[string]bool
	// failed: at some moment a pod showed what fails the check (a
	// --fail-on reason, more restarts than --max-restarts) while it was
	// judged: not being deleted, and with targets one of theirs, at the
	// revision they roll out.
	failed bool
}

type podRecord struct {
	inc     int
	states  []stateRecord
	deleted bool
	// initial: this incarnation was in the run's initial list; initialRV
	// is its state in the first list that succeeded, if it was there.
	initial   bool
	initialRV string
	// rev: its revision (targets); restarts: its container's restarts.
	rev      int
	restarts int32
}

type stateRecord struct {
	rv       string
	state    podState
	restarts int32
}

func newTruth(h *history) *truth {
	t := &truth{h: h, keys: map[string][]*podRecord{}, owner: map[string]string{}, current: map[string]int{},
		ctrl: map[string]string{}, leftEver: map[string]bool{}}
	for k, o := range h.owners {
		t.owner[h.key(k)] = o
	}
	for k, c := range h.controllers {
		t.ctrl[h.key(k)] = c
	}
	for w, rev := range h.startRev {
		t.current[w] = rev
	}
	return t
}

// put writes a new state of key to the sim: a new incarnation at revision
// rev with restarts restarts when the name is free, else the next state of
// the current one, restarts more.
func (t *truth) put(s *sim, key string, st podState, rev int, restarts int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns, name, _ := strings.Cut(key, "/")
	recs := t.keys[key]
	var cur *podRecord
	if n := len(recs); n > 0 && !recs[n-1].deleted {
		cur = recs[n-1]
		cur.restarts += restarts
	} else {
		cur = &podRecord{inc: n + 1, rev: rev, restarts: restarts}
		t.keys[key] = append(recs, cur)
	}
	t.extra++
	p := newSimPod(ns, name, cur.inc, st, strconv.Itoa(t.extra))
	p.Status.ContainerStatuses[0].RestartCount = cur.restarts
	if o := t.ownerOf(key); o != "" {
		decorate(p, o, cur.rev)
	} else if c := t.ctrl[key]; c != "" {
		controlledBy(p, c)
	}
	if t.leftBehindState(key, st) {
		t.leftEver[key] = true
	}
	s.put(p)
	cur.states = append(cur.states, stateRecord{rv: s.get(key).Labels["rv"], state: st, restarts: cur.restarts})
	t.noteFailures()
}

// revOf is the revision of key's pod.
func (t *truth) revOf(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	recs := t.keys[key]
	return recs[len(recs)-1].rev
}

// ownerOf is the owner of key's pods with targets ("" without).
func (t *truth) ownerOf(key string) string {
	if isSentinel(key) && t.h.targets {
		return "zz"
	}
	return t.owner[key]
}

func (t *truth) remove(s *sim, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.remove(key)
	recs := t.keys[key]
	recs[len(recs)-1].deleted = true
}

// rollOut records that workload rolls out revision rev from now on.
func (t *truth) rollOut(workload string, rev int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.current[workload] = rev
	t.noteFailures()
}

// judged: the run judges the pods of key (with targets, only its targets'
// pods are).
func (t *truth) judged(key string) bool {
	return !t.h.targets || owned(t.ownerOf(key))
}

// spared: the pod belongs to a revision its workload is replacing.
func (t *truth) spared(key string, r *podRecord) bool {
	o := t.ownerOf(key)
	return t.h.targets && t.current[o] != 0 && r.rev != t.current[o]
}

// leftBehindState: a pod of key in state st is in phase Failed and its
// controller is a ReplicaSet, StatefulSet or DaemonSet, which replaces it
// and ignores it: the check does not judge it (not being deleted: a pod
// on its way out is no Failed pod left behind).
func (t *truth) leftBehindState(key string, st podState) bool {
	if st != failedPhase && st != evicted {
		return false
	}
	if t.h.targets {
		return owned(t.ownerOf(key))
	}
	return t.ctrl[key] == "replicaset"
}

// leftBehind: the current pod of key is left behind (leftBehindState).
func (t *truth) leftBehind(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	recs := t.keys[key]
	last := recs[len(recs)-1]
	return !last.deleted && t.leftBehindState(key, last.states[len(last.states)-1].state)
}

// failing: the pod of key in state st fails the check, its restarts
// counted from baseline. A pod left behind by its controller never does.
func (t *truth) failing(key string, st stateRecord, baseline int32) bool {
	if st.state == terminating || t.leftBehindState(key, st.state) {
		return false
	}
	return st.state == crashLooping || st.state == failedPhase || st.state == evicted ||
		t.h.maxRestarts != check.Unset && st.restarts-baseline > int32(t.h.maxRestarts)
}

// noteFailures notes whether a present pod fails the check now. Its
// restarts are counted from the fewest it had when the run may have first
// seen it.
func (t *truth) noteFailures() {
	for key, recs := range t.keys {
		last := recs[len(recs)-1]
		if isSentinel(key) || last.deleted || !t.judged(key) || t.spared(key, last) {
			continue
		}
		if t.failing(key, last.states[len(last.states)-1], last.states[0].restarts) {
			t.failed = true
		}
	}
}

// rolloutStatus is what the workloads' controllers report of the pods
// left: pods being deleted are not counted; updated ones run the revision
// rolled out.
func (t *truth) rolloutStatus() map[string]rolloutStatus {
	out := map[string]rolloutStatus{}
	for key, recs := range t.keys {
		last := recs[len(recs)-1]
		o := t.ownerOf(key)
		st := last.states[len(last.states)-1].state
		// Their controllers count active pods only: not being deleted, not
		// Failed (a pod left behind is replaced, see leftBehindState).
		if last.deleted || st == terminating || st == failedPhase || st == evicted || t.current[o] == 0 {
			continue
		}
		s := out[o]
		s.replicas++
		if last.rev == t.current[o] {
			s.updated++
		}
		// A Deployment's available pods are its updated ones once no old
		// one is left (its rule asks for that too), and a DaemonSet's
		// those it updated; a StatefulSet counts every ready pod, whatever
		// its revision.
		if st == runningReady && (o == "db" || last.rev == t.current[o]) {
			s.ready++
		}
		out[o] = s
	}
	return out
}

// markInitial notes the incarnations that a run may print as SYNC: those
// the sim's lists showed, up to the first list that succeeded.
func (t *truth) markInitial(simOf func(key string) *sim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, recs := range t.keys {
		s := simOf(key)
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

// isSentinel: key is the sentinel of one of the contexts.
func isSentinel(key string) bool { return strings.HasPrefix(key, sentinel) }

// obs is one printed message as far as its format shows it: typ "" when
// the format does not show it; inc 0 and rv "" when it shows no state.
type obs struct {
	typ string
	key string
	inc int
	rv  string
}

func (o obs) String() string {
	return fmt.Sprintf("%s %s inc=%d rv=%s", o.typ, o.key, o.inc, o.rv)
}

// parse reads the printed stream back into messages.
func parse(h *history, text string) ([]obs, error) {
	switch h.format {
	case "json":
		return parseJSON(text)
	case "yaml":
		return parseYAML(text)
	case "name":
		return parseName(h, text)
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
	return obs{typ: d.Type, key: m.Namespace + "/" + m.Name, inc: inc, rv: m.Labels["rv"]}, nil
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

var verbTypes = map[string]string{"synced": "SYNC", "added": "ADD", "updated": "UPDATE", "gone": "GONE"}

func parseName(h *history, text string) ([]obs, error) {
	var out []obs
	for _, line := range lines(text) {
		if h.contexts > 1 {
			_, line, _ = strings.Cut(line, " ") // CONTEXT pod/NAME VERB
		}
		m := namePattern.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %q is not pod/NAME VERB", line)
		}
		out = append(out, obs{typ: verbTypes[m[2]], key: "a/" + m[1]})
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
		if h.contexts > 1 {
			f = append(f[:1:1], f[2:]...) // CONTEXT: names tell the contexts apart
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
		out = append(out, obs{typ: f[0], key: ns + "/" + f[1], inc: inc, rv: f[at+1]})
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

// showsTypes: the format prints each message's type.
func (h *history) showsTypes() bool {
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
// last printed GONE (or never printed). A sentinel still there is not
// waited for; a pod no target owns is never printed (see checkKey).
func finalGaps(h *history, t *truth, all []obs) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	printed := byKey(all)
	var gaps []string
	for key, recs := range t.keys {
		if isSentinel(key) && !recs[len(recs)-1].deleted || !t.judged(key) {
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
	case last.deleted && (m.typ == "GONE" || m.typ == ""):
		// Without types a GONE looks like any other message; and a pod
		// created and deleted while the watch was cut is never seen.
		return ""
	case last.deleted:
		return fmt.Sprintf("deleted, but last printed as %s", m)
	case m.typ == "GONE":
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
//   - the summary counts each printed type once;
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
		for _, g := range finalGaps(r.h, r.truth, all) {
			bad = append(bad, "final state: "+g)
		}
	}
	bad = append(bad, r.checkCounts(all)...)
	bad = append(bad, r.checkPrintErrors()...)
	bad = append(bad, r.checkOnce(all)...)
	bad = append(bad, r.checkForeign()...)
	bad = append(bad, r.checkLeftBehind()...)
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
		if last.deleted || printable(st.state) || quiet || !r.truth.judged(key) {
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
	if !r.truth.judged(key) {
		return []string{fmt.Sprintf("%s: printed, but no target controls it (%s)", key, r.truth.ownerOf(key))}
	}
	typed := r.h.showsTypes()
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
			bad = append(bad, order(key, prev, m, prevIdx, idx, typed, repeated)...)
			repeated = prev != nil && idx == prevIdx
			if goneInc[m.inc] && m.typ != "" {
				bad = append(bad, fmt.Sprintf("%s: %s after the GONE of incarnation %d", key, m, m.inc))
			}
		}
		if typed {
			bad = append(bad, r.checkType(key, prev, m, i)...)
			if m.typ == "GONE" {
				goneInc[m.inc] = true
			}
		}
		prev, prevIdx = m, idx
	}
	return bad
}

// order: states move forward; the same state again only as the GONE
// (where the format shows no type, a state may show twice in a row, but
// not three times); a new incarnation only after the GONE of the previous
// one.
func order(key string, prev, m *obs, pi, i [2]int, typed, repeated bool) []string {
	if prev == nil {
		return nil
	}
	switch {
	case i[0] < pi[0] || i[0] == pi[0] && i[1] < pi[1]:
		return []string{fmt.Sprintf("%s: out of order: %s after %s", key, m, prev)}
	case i == pi && (typed && (m.typ != "GONE" || prev.typ == "GONE") || !typed && repeated):
		return []string{fmt.Sprintf("%s: the same state again without a change: %s after %s", key, m, prev)}
	case i[0] > pi[0] && typed && prev.typ != "GONE":
		return []string{fmt.Sprintf("%s: a new pod (incarnation %d) printed as %s without the GONE of incarnation %d (last %s)", key, m.inc, m.typ, prev.inc, prev)}
	}
	return nil
}

// checkType: which type may open an incarnation, and which may follow.
func (r *result) checkType(key string, prev, m *obs, i int) []string {
	newInc := prev == nil || prev.inc != m.inc || m.inc == 0 && prev.typ == "GONE"
	rec := r.truth.incarnation(key, m.inc)
	initial := m.inc == 0 && r.anyInitial(key) || rec != nil && rec.initial
	switch {
	case m.typ == "SYNC" && r.h.watchOnly:
		return []string{fmt.Sprintf("%s: SYNC printed with --watch-only", key)}
	case m.typ == "SYNC" && (!initial || !newInc):
		return []string{fmt.Sprintf("%s: SYNC for a pod that was not in the initial list, or not first: %s", key, m)}
	case newInc && m.typ == "UPDATE" && (!initial || !r.h.watchOnly):
		return []string{fmt.Sprintf("%s: a pod first printed as UPDATE: %s", key, m)}
	case !newInc && m.typ == "ADD":
		return []string{fmt.Sprintf("%s: ADD for a pod printed before: %s after %s", key, m, prev)}
	case newInc && m.typ == "ADD" && i == 0 && (rec != nil && rec.initial || m.inc == 0 && len(r.truth.keys[key]) == 1 && initial):
		// Without incarnations (-o name), an ADD first may be of a later
		// pod of the name: one of the list, deleted before a worker took
		// it, need never be printed.
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
	if !r.h.showsTypes() || r.h.once && !r.h.check {
		return nil // a plain --once has no summary
	}
	// Every played run ends with a summary: a check's verdict, or the
	// end the test gives it as --timeout would.
	m := eventsLine.FindStringSubmatch(r.stderr)
	if m == nil {
		return []string{"no Events line in the summary: " + r.stderr}
	}
	printed := map[string]int{}
	for _, o := range all {
		printed[o.typ]++
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

// checkVerdict: the exit code is what the truth says. A run that failed
// fast needs a failure that really happened (truth.failed); a failure in
// the final state must fail it; otherwise it is met exactly when the final
// state (the sentinels gone) meets the check (see finalVerdict). --once
// judges the state before the run the same way. A run is never met while
// one of its contexts is disconnected.
func (r *result) checkVerdict() []string {
	code := r.outcome.ExitCode()
	if !r.h.check {
		if code != podsync.ExitOK {
			return []string{fmt.Sprintf("a stream without a check ended %d (%+v)", code, r.outcome)}
		}
		return nil
	}
	if r.metWhileLost {
		return []string{fmt.Sprintf("exit %d while context %d was disconnected", code, r.h.lostAtEnd)}
	}
	failedEver, failedNow, met := r.truth.failed, false, false
	if !r.early || r.h.once {
		failedNow, met = r.finalVerdict()
	}
	if r.h.staysLost {
		met = false // its last known state is no verdict
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

// finalVerdict judges the true final state as the contract states the
// history's check, with the default --fail-on:
//   - a pod fails it when it shows CrashLoopBackOff or phase Failed, or
//     (--max-restarts N) its container restarted more than N times since
//     the run first saw it (since its creation for a pod that appeared
//     later); pods being deleted never fail it, nor do pods in phase
//     Failed whose controller is a ReplicaSet, StatefulSet or DaemonSet,
//     which replaces them (left behind: not judged, not counted, except
//     by --until gone, which waits for them);
//   - --until ready is met when every counted pod (pods being deleted
//     and pods left behind aside) is ready and at least --min-pods are
//     counted (when not given,
//     1; with targets, 0: each target's rule says how many it wants);
//   - --until gone is met when no pod is left, being deleted or not, and
//     --min-pods does not change that.
//
// With several contexts, the check is met when it is met in each context,
// on that context's pods alone. With targets, only the pods they control
// count. A pod of a revision
// its workload is replacing never fails the check. Deployment web is
// rolled out when every pod it wants runs its current revision, no pod of
// another is left (pods being deleted aside), and each is ready;
// StatefulSet db when it has as many ready pods as it wants and as many
// at its update revision, whatever the revisions of the others;
// DaemonSet ds when each node it wants runs a pod of its newest revision,
// ready.
func (r *result) finalVerdict() (failed, met bool) {
	met = true
	for c := range r.h.contexts {
		f, m := r.finalVerdictIn(c)
		failed, met = failed || f, met && m
	}
	return failed, met
}

// finalVerdictIn judges context c alone.
func (r *result) finalVerdictIn(c int) (failed, met bool) {
	t := r.truth
	counted, ready, present := 0, 0, 0
	for key, recs := range t.keys {
		last := recs[len(recs)-1]
		if isSentinel(key) || last.deleted || !t.judged(key) || contextOf(key) != c {
			continue
		}
		present++
		st := last.states[len(last.states)-1]
		if t.failing(key, st, r.baseline(last)) && !t.spared(key, last) {
			failed = true
		}
		if r.h.until != "gone" && t.leftBehindState(key, st.state) {
			continue // neither counted nor judged; gone waits for it
		}
		switch st.state {
		case terminating:
			continue
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
		if r.h.targets {
			want = 0
		}
	}
	met = ready == counted && counted >= want
	if r.h.targets {
		st := t.rolloutStatus()
		web, db, ds := st["web"], st["db"], st["ds"]
		met = met && web.updated >= desired["web"] && web.replicas == web.updated && web.ready >= web.updated &&
			db.ready >= desired["db"] && db.updated >= desired["db"] &&
			ds.updated >= desired["ds"] && ds.ready >= desired["ds"]
	}
	return failed, met
}

// baseline is the count of restarts --max-restarts counts from for the
// final state of a pod: those of the state of the run's first list, for a
// pod of that list; none for a pod that appeared later.
func (r *result) baseline(rec *podRecord) int32 {
	if !rec.initial {
		return 0
	}
	for _, st := range rec.states {
		if st.rv == rec.initialRV {
			return st.restarts
		}
	}
	return rec.states[0].restarts
}

// checkOnce: --once prints each pod of the list as SYNC (nothing with
// --watch-only), in its state before the run, and nothing else; when it
// prints none without a check or targets, stderr says so as kubectl does.
func (r *result) checkOnce(all []obs) []string {
	if !r.h.once {
		return nil
	}
	var bad []string
	printed := byKey(all)
	n := 0
	for key, recs := range r.truth.keys {
		if !r.truth.judged(key) {
			continue
		}
		n++
		msgs := printed[key]
		want := 1
		if r.h.watchOnly || r.h.format == "strict-template" && !printable(recs[0].states[0].state) {
			want = 0
		}
		switch {
		case len(msgs) != want:
			bad = append(bad, fmt.Sprintf("--once: %s printed %d times, want %d: %v", key, len(msgs), want, msgs))
		case want == 1 && (msgs[0].typ != "SYNC" && msgs[0].typ != "" || msgs[0].rv != "" && msgs[0].rv != recs[0].states[0].rv):
			bad = append(bad, fmt.Sprintf("--once: %s printed as %s, want its SYNC at rv %s", key, msgs[0], recs[0].states[0].rv))
		}
	}
	if n == 0 && !r.h.check && !r.h.targets && !strings.Contains(r.stderr, "No resources found") {
		bad = append(bad, "--once found no pod and stderr does not say so")
	}
	return bad
}

// checkForeign: a pod that carries a target's labels but that no target
// controls is named on stderr once per pod (once per incarnation); each
// that is there at the end has been named.
func (r *result) checkForeign() []string {
	if !r.h.targets {
		return nil
	}
	var bad []string
	for key, recs := range r.truth.keys {
		o := r.truth.ownerOf(key)
		if r.truth.judged(key) {
			continue
		}
		_, name, _ := strings.Cut(key, "/")
		kind := map[string]string{"foreign-web": "deployment/web", "foreign-db": "statefulset/db", "foreign-ds": "daemonset/ds"}[o]
		note := fmt.Sprintf("podsync: pod %s matches the selector of %s but is not controlled by it: not judged\n", name, kind)
		n := strings.Count(r.stderr, note)
		switch {
		case n > len(recs):
			bad = append(bad, fmt.Sprintf("%s (%d incarnations) named %d times", key, len(recs), n))
		case n == 0 && !recs[len(recs)-1].deleted && (r.settled || r.h.once):
			bad = append(bad, fmt.Sprintf("%s matches %s but is never named", key, kind))
		}
	}
	return bad
}

// checkLeftBehind: a check (other than --until gone) names on stderr each
// pod its controller left behind, and no other; each still there at the
// end has been named.
func (r *result) checkLeftBehind() []string {
	var bad []string
	for key, recs := range r.truth.keys {
		note := regexp.MustCompile(`(?m)^podsync: (context c\d: )?pod ` + regexp.QuoteMeta(key) + ` .* and replaced by its (ReplicaSet|StatefulSet|DaemonSet) \S+; not judged$`)
		named := note.MatchString(r.stderr)
		last := recs[len(recs)-1]
		final := !last.deleted && r.truth.leftBehindState(key, last.states[len(last.states)-1].state)
		switch {
		case named && !r.truth.leftEver[key]:
			bad = append(bad, fmt.Sprintf("%s is named as left behind, but never was", key))
		case named && (!r.h.check || r.h.until == "gone"):
			bad = append(bad, fmt.Sprintf("%s is named as left behind by a run that does not judge it", key))
		case !named && final && r.h.check && r.h.until != "gone" && !r.early && (r.settled || r.h.once) && r.truth.judged(key):
			bad = append(bad, fmt.Sprintf("%s is left behind by its controller at the end, but never named", key))
		}
	}
	return bad
}

// contextOf is the context of a key, told by the first letter of its name.
func contextOf(key string) int {
	_, name, _ := strings.Cut(key, "/")
	return int(name[0] - 'p')
}
