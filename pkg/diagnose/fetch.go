package diagnose

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubectl-podsync/kubectl-podsync/internal/retry"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/diagnosis"
)

// Byte limits of a log tail. The server is asked for the last lines
// without a byte limit, since its limit counts from the start of the tail
// and one long line would drop the last lines, which hold the error a
// diagnosis is for. Instead each line is cut to bytesPerLine here, and a
// tail reads at most maxTailBytes from the server.
const (
	bytesPerLine = 2048
	maxTailBytes = 64 << 20
)

// cutMark ends a line the byte limit shortened.
const cutMark = "…"

// fetchLog reads the last lines lines of one container's log, its
// previous instance when asked, in one request: client-go's own retries
// are off (MaxRetries(0)), since the caller's queue retries with its
// rate limiter and honours Retry-After without holding a worker.
func fetchLog(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, c diagnosis.FailedContainer, lines int) (*check.LogTail, error) {
	tail := int64(lines)
	opts := &corev1.PodLogOptions{Container: c.Name, Previous: c.Previous, TailLines: &tail}
	body, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).MaxRetries(0).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	limited := &io.LimitedReader{R: body, N: maxTailBytes}
	got, cut, err := readTail(limited, lines, bytesPerLine)
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	// A tail that reached maxTailBytes was cut too.
	return &check.LogTail{Previous: c.Previous, Lines: got, Truncated: cut || limited.N == 0}, nil
}

// readTail keeps the last n lines of r, each cut to perLine bytes (at a
// character's start, then cutMark); cut says a line was cut. It holds at
// most n lines of perLine bytes, however long the lines are.
func readTail(r io.Reader, n, perLine int) (lines []string, cut bool, err error) {
	br := bufio.NewReader(r)
	var cuts []bool
	for {
		line, size, err := readLine(br, perLine)
		if err != nil && err != io.EOF {
			return nil, false, err
		}
		if err == io.EOF && size == 0 {
			break
		}
		text, wasCut := string(line), size > len(line)
		if wasCut {
			text = cutLine(line) + cutMark
		}
		lines, cuts = append(lines, text), append(cuts, wasCut)
		if len(lines) > n {
			lines, cuts = lines[1:], cuts[1:]
		}
		if err == io.EOF {
			break
		}
	}
	return lines, slices.Contains(cuts, true), nil
}

// readLine reads one line of br without its newline, keeping its first
// perLine bytes; size is the whole line's length.
func readLine(br *bufio.Reader, perLine int) (line []byte, size int, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		if room := perLine - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return line, size, err
		}
	}
}

// cutLine drops a character the byte limit split.
func cutLine(line []byte) string {
	end := len(line)
	for end > 0 && end > len(line)-utf8.UTFMax && !utf8.Valid(line[:end]) {
		end--
	}
	return string(line[:end])
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
	if errors.Is(err, context.DeadlineExceeded) || retry.Unreachable(err) {
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
