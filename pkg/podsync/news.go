package podsync

import (
	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// news handles a message that is news about a pod rather than its state
// (DIAGNOSIS, WARNING, NORMAL): the check does not judge it. A diagnosis
// is kept for the summary and printed with --diagnose; an Event is
// joined to the pods shown and folded (see eventJoin).
func (s *stream) news(w *clusterRun, m message.Message) (ending, bool) {
	if m.Type != message.Diagnosis {
		return s.event(w, m)
	}
	if m.Diagnosis == nil {
		return ending{}, false
	}
	w.diag.remember(m)
	if !s.cfg.Diagnose {
		return ending{}, false
	}
	return s.printNews(w, m)
}

// printNews counts and prints a news message. With --sort-by, news that
// comes while the initial list is held back for sorting waits for it.
func (s *stream) printNews(w *clusterRun, m message.Message) (ending, bool) {
	w.events[m.Type.String()]++
	m.Context = w.name
	if w.list.holds(m) {
		w.list.held = append(w.list.held, m)
		return ending{}, false
	}
	return s.print(m)
}

// podNews follows a pod message: a gone pod's diagnoses and Events are
// forgotten; a shown pod gets the Events that came before it; a quiet
// check notes when the pod last changed, for its progress line.
func (s *stream) podNews(w *clusterRun, m message.Message) (ending, bool) {
	key := m.Key.String()
	if m.Type == message.Gone {
		w.diag.forget(key)
		delete(w.changed, key)
	} else if s.progress != nil {
		w.changed[key] = s.progress.now()
	}
	if !s.cfg.Events {
		return ending{}, false
	}
	for _, ev := range w.join.podShown(m) {
		if end, over := s.event(w, message.Message{Key: m.Key, Event: ev}); over {
			return end, true
		}
	}
	return ending{}, false
}
