package podsync

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/controller"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnose"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// diagnosisGrace is how long a failed check waits for the diagnoses of the
// pods it explains: the verdict is known, and never waits longer.
const diagnosisGrace = 2 * time.Second

// diagnosing reports whether the run diagnoses pods in a failure state:
// to print them (--diagnose), or for a check's summary.
func diagnosing(cfg Config) bool { return cfg.Diagnose || cfg.Check.Judges() }

// diagnoses is one cluster's diagnoses as the stream knows them.
type diagnoses struct {
	// byKey is the newest diagnosis of each pod; seen, the failures
	// diagnosed, to tell whether a pod's current failure is.
	byKey map[string]*diagnosis.Diagnosis
	seen  diagnose.Seen
}

// setUpDiagnosis makes the diagnosis the workers' own work for each key:
// an attempt that may pass goes back to the rate-limited queue, spaced
// like the project's other retries (retry.Backoff, a Retry-After when
// the server sends one), and after --max-retries attempts the diagnosis
// is delivered with what it has and one line on stderr.
func (w *clusterRun) setUpDiagnosis(ctx context.Context, cfg Config, c Cluster, s *stream, opts *controller.Options) {
	if !diagnosing(cfg) || c.Clients == nil {
		return
	}
	w.diag = &diagnoses{byKey: map[string]*diagnosis.Diagnosis{}}
	name := ""
	if s.several {
		name = c.Name
	}
	d := diagnose.New(diagnose.Options{Client: c.Clients.Kube, LogLines: cfg.LogLines, Warn: s.stderr, Cluster: name})
	w.diagnoser = d
	deliver := opts.Deliver
	b := retry.Backoff()
	opts.RateLimiter = workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](b.Duration, b.Cap),
		// All keys together: at most 10 retries a second, bursts of 100,
		// as client-go's default controller limiter allows.
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	opts.Work = func(ctx context.Context, key cache.ObjectName, row *wire.PodRow) error {
		pod := podOf(row)
		if _, left := check.LeftBehindOf(pod); left && !cfg.Diagnose {
			// No verdict depends on a pod its controller replaces: its
			// logs and Events are not worth the API's time.
			return nil
		}
		got, err := d.Diagnose(ctx, key.String(), pod)
		if got != nil {
			_ = deliver(ctx, []message.Message{{Type: message.Diagnosis, Key: key, Row: row, Diagnosis: got}})
		}
		return err
	}
	opts.OnDrop = func(key cache.ObjectName, err error) {
		fmt.Fprintf(s.stderr, "error: pod %s: %s\n", key, text.SafeLine(err.Error(), 0))
		if got := d.GiveUp(key.String(), err); got != nil {
			_ = deliver(ctx, []message.Message{{Type: message.Diagnosis, Key: key, Diagnosis: got}})
		}
	}
}

// remember records a delivered diagnosis for the explanation; a run that
// diagnoses nothing has no diagnoses (nil).
func (d *diagnoses) remember(m message.Message) {
	if d == nil {
		return
	}
	d.byKey[m.Key.String()] = m.Diagnosis
	d.seen.Add(m.Key.String(), m.Diagnosis.Metadata.UID, m.Diagnosis.Failure)
}

// forget drops what is known of a pod that is gone.
func (d *diagnoses) forget(key string) {
	if d == nil {
		return
	}
	delete(d.byKey, key)
	d.seen.Forget(key)
}

// awaits reports whether the pod of key is in a failure state that no
// delivered diagnosis covers yet.
func (w *clusterRun) awaits(key string) bool {
	if w.diagnoser == nil {
		return false
	}
	row := w.row(key)
	if row == nil {
		return false
	}
	pod := row.Pod()
	f, failing := diagnose.Of(pod)
	return failing && !w.diag.seen.Covers(key, pod.UID, f)
}

// awaitDiagnoses lets a failed check wait, at most diagnosisGrace, for
// the diagnoses of the pods its summary explains, and --once --diagnose
// for those of every pod it printed; other messages that arrive meanwhile
// are after the end and are not judged.
func (s *stream) awaitDiagnoses(ctx context.Context, end ending) {
	failed := end.summary && (end.verdict == Failed || end.verdict == NotMet)
	snapshot := s.cfg.Once && s.cfg.Diagnose && end.verdict == Done
	if !failed && !snapshot || ctx.Err() != nil {
		return
	}
	awaited := map[*clusterRun][]string{}
	for _, w := range s.clusters {
		if failed {
			awaited[w] = explained(w)
		} else if w.ctrl != nil {
			awaited[w] = w.ctrl.Indexer().ListKeys()
		}
	}
	timer := time.NewTimer(diagnosisGrace)
	defer timer.Stop()
	for anyAwaited(awaited) {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			s.graceOver = true
			return
		case d := <-s.deliveries:
			s.late(s.clusters[d.cluster], d.msgs)
		case p := <-s.pages:
			// After the verdict a page is not printed, but the informer
			// must get its list, or no worker starts.
			close(p.done)
		}
	}
}

// row is the newest state the stream knows of the pod of key: the
// informer's, or, before the informer has it, that of the page of the
// initial list it was printed from (nil: neither).
func (w *clusterRun) row(key string) *wire.PodRow {
	if obj, ok, err := w.ctrl.Indexer().GetByKey(key); err == nil && ok {
		return obj.(*wire.PodRow)
	}
	name, err := cache.ParseObjectName(key)
	if err != nil {
		return nil
	}
	return w.list.streamed[name]
}

// anyAwaited reports whether one of the pods still awaits its diagnosis,
// dropping from awaited those that do not.
func anyAwaited(awaited map[*clusterRun][]string) bool {
	found := false
	for w, keys := range awaited {
		keys = slices.DeleteFunc(keys, func(k string) bool { return !w.awaits(k) })
		awaited[w] = keys
		found = found || len(keys) > 0
	}
	return found
}

// late takes the diagnoses among messages that came after the verdict.
func (s *stream) late(w *clusterRun, msgs []message.Message) {
	for _, m := range msgs {
		if m.Type == message.Diagnosis {
			_, _ = s.news(w, m)
		}
	}
}

// attachDiagnosis adds a pod's diagnosis to its explanation: the log
// tails under their containers, the diagnosis' events when the
// explanation could not list newer ones, and what is missing. A pod in a
// failure state without a diagnosis of that failure says why.
func (s *stream) attachDiagnosis(w *clusterRun, key string, x *check.PodExplanation, eventsListed bool) {
	if w.diagnoser == nil {
		return
	}
	if d := w.diag.byKey[key]; d != nil {
		for i := range x.Containers {
			if l := d.Log(x.Containers[i].Name); l != nil {
				x.Containers[i].Logs = l
			}
		}
		if !eventsListed && len(d.Events) > 0 {
			x.Events = d.Events[:min(len(d.Events), maxExplainedEvents)]
		}
		x.Missing = append(x.Missing, d.Missing...)
	}
	if !w.awaits(key) {
		return
	}
	why := "diagnosis: not made before the run ended"
	if s.graceOver {
		why = fmt.Sprintf("diagnosis: not done within %s of the verdict", diagnosisGrace)
	}
	x.Missing = append(x.Missing, why)
}

// maxExplainedEvents matches the events an explanation keeps.
const maxExplainedEvents = 5

func podOf(row *wire.PodRow) *corev1.Pod {
	if row == nil {
		return nil
	}
	return row.Pod()
}
