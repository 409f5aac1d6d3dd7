package diagnose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source"
)

// Byte limits of one log request: a tail of N lines may be at most N
// times bytesPerLine, so one huge line cannot flood the output, and never
// less than minLogBytes nor more than maxLogBytes.
const (
	bytesPerLine = 2048
	minLogBytes  = 16 << 10
	maxLogBytes  = 1 << 20
)

// logLimit is the byte limit of a tail of lines lines.
func logLimit(lines int) int64 {
	return min(max(int64(lines)*bytesPerLine, minLogBytes), maxLogBytes)
}

// fetchLog reads the last lines lines of one container's log, its
// previous instance when asked, in one request: client-go's own retries
// are off (MaxRetries(0)), since the caller's queue retries with its
// rate limiter and honours Retry-After without holding a worker.
func fetchLog(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, c FailedContainer, lines int) (*check.LogTail, error) {
	tail, limit := int64(lines), logLimit(lines)
	opts := &corev1.PodLogOptions{Container: c.Name, Previous: c.Previous, TailLines: &tail, LimitBytes: &limit}
	body, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).MaxRetries(0).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	out := &check.LogTail{Previous: c.Previous, Lines: splitLines(data), Truncated: int64(len(data)) >= limit}
	if len(out.Lines) > lines {
		out.Lines = out.Lines[len(out.Lines)-lines:]
	}
	return out, nil
}

func splitLines(data []byte) []string {
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(data) == 0 {
		return []string{}
	}
	return strings.Split(string(data), "\n")
}

// fetchEvents lists the Events about the pod (this UID), in one request,
// as SearchWithContext would, but without client-go's own retries.
func fetchEvents(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) ([]corev1.Event, error) {
	sel := fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.name": pod.Name,
		"involvedObject.namespace": pod.Namespace, "involvedObject.uid": string(pod.UID),
	}
	if pod.UID == "" {
		delete(sel, "involvedObject.uid")
	}
	opts := metav1.ListOptions{FieldSelector: sel.AsSelector().String()}
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		// A clientset without a REST client (client-go's fake) answers
		// the typed call; it has no retries to turn off.
		list, err := client.CoreV1().Events(pod.Namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	var list corev1.EventList
	err := rc.Get().Namespace(pod.Namespace).Resource("events").
		VersionedParams(&opts, scheme.ParameterCodec).
		MaxRetries(0).Do(ctx).Into(&list)
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Retriable reports whether a failed read may work if asked again: the
// server could not be reached or answer for now (5xx, 429, a timeout, a
// reset connection). Refusals (403), a pod that is gone (404) and bad
// requests (a container not started) will answer the same.
func Retriable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || source.Unreachable(err) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code >= 500 || code == 429
	}
	return false
}

// RetryError is a failed attempt that may pass; the controller waits at
// least RetryAfter before the next one.
type RetryError struct {
	Err   error
	After time.Duration
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfter is the delay the server asked for (Retry-After), if any.
func (e *RetryError) RetryAfter() time.Duration { return e.After }

// retryAfter is the Retry-After of err in seconds, as client-go records
// it from the header (or from the Status the server sent).
func retryAfter(err error) time.Duration {
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
