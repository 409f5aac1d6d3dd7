package diagnose

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-podsync/kubectl-podsync/internal/text"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
)

// Tail reads the last lines of a running container's log, in one request
// bounded like an attempt, for the explanation of a container that is
// running but failed its probes (no failure state makes a diagnosis read
// it). Nil when logs are off (--log-lines 0); a log that could not be
// read says why.
func (d *Diagnoser) Tail(ctx context.Context, pod *corev1.Pod, container string) *check.LogTail {
	if d.opts.LogLines <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.AttemptTime)
	defer cancel()
	tail, err := d.readLog(ctx, pod, diagnosis.FailedContainer{Name: container, HasLog: true})
	if apierrors.IsForbidden(err) {
		d.refused(pod.Namespace, resourceLogs, err)
	}
	if err != nil {
		return &check.LogTail{Lines: []string{}, Error: text.OneLine(err.Error(), 0)}
	}
	return tail
}
