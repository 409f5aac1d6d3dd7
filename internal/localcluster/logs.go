//go:build unix

package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ContainerLog is what one container printed, a line per string: Current
// is the output of its running (or last) instance, which `kubectl logs`
// shows; Previous that of the instance before, for `kubectl logs
// --previous`.
type ContainerLog struct {
	Current, Previous []string
}

// AnyContainer as a key of SetLogs' map stands for every container that
// has no entry of its own.
const AnyContainer = ""

var logsResource = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// fieldManager names this package in server-side applies.
const fieldManager = "podsync-localcluster"

// SetLogs gives a pod's containers their logs, keyed by container name (or
// AnyContainer): it writes them as CRI log files under Dir/podlogs and
// applies the pod's kwok Logs object. Calling it again replaces the
// files. If the pod exists, the Logs object is owned by it, so it goes
// away with the pod; if the pod is bound to a node, SetLogs returns once
// the API server serves the new logs.
func (c *Cluster) SetLogs(ctx context.Context, namespace, pod string, logs map[string]ContainerLog) error {
	if len(logs) == 0 {
		return fmt.Errorf("set logs of %s/%s: no containers given", namespace, pod)
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		p = nil
	} else if err != nil {
		return fmt.Errorf("set logs of %s/%s: %w", namespace, pod, err)
	}
	if err := c.writeLogFiles(namespace, pod, logs); err != nil {
		return fmt.Errorf("set logs of %s/%s: %w", namespace, pod, err)
	}
	if err := c.applyLogs(ctx, namespace, pod, p, slices.Sorted(maps.Keys(logs))); err != nil {
		return fmt.Errorf("set logs of %s/%s: %w", namespace, pod, err)
	}
	if p == nil || p.Spec.NodeName == "" {
		return nil
	}
	return c.waitLogsServed(ctx, p, logs)
}

// AppendLog adds lines to the current log of a container whose logs
// SetLogs set (falling back to the AnyContainer entry). kwok reads the file
// on every request, so the lines show at once, also to `kubectl logs -f`.
func (c *Cluster) AppendLog(namespace, pod, container string, lines ...string) error {
	path := c.logFile(namespace, pod, container, false)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		path = c.logFile(namespace, pod, AnyContainer, false)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append to log of %s/%s container %q (SetLogs first): %w", namespace, pod, container, err)
	}
	_, err = f.Write(criLines(time.Now(), lines))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to log of %s/%s container %q: %w", namespace, pod, container, err)
	}
	return nil
}

// logFile is where a container's log lives. Container names are DNS
// labels, so "_any" cannot clash with one.
func (c *Cluster) logFile(namespace, pod, container string, previous bool) string {
	name := container
	if name == AnyContainer {
		name = "_any"
	}
	if previous {
		name += ".previous"
	}
	return filepath.Join(c.Dir, "podlogs", namespace, pod, name+".log")
}

// writeLogFiles writes both files of each container: kwok fails
// `--previous` with a confusing error when an entry lacks its previous
// file, so an empty one is written when there is no previous log.
func (c *Cluster) writeLogFiles(namespace, pod string, logs map[string]ContainerLog) error {
	now := time.Now()
	for container, l := range logs {
		cur := c.logFile(namespace, pod, container, false)
		if err := os.MkdirAll(filepath.Dir(cur), 0o755); err != nil {
			return fmt.Errorf("create log folder: %w", err)
		}
		// The previous instance ended a little before the current began.
		files := map[string][]byte{
			cur: criLines(now.Add(-time.Second), l.Current),
			c.logFile(namespace, pod, container, true): criLines(now.Add(-time.Minute), l.Previous),
		}
		for path, data := range files {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return fmt.Errorf("write log file: %w", err)
			}
		}
	}
	return nil
}

// criLines formats lines as a container runtime writes them (the format
// kubelet and kwok read): "TIMESTAMP stdout F TEXT", a microsecond apart
// from start on, so their order survives --timestamps and --since-time.
func criLines(start time.Time, lines []string) []byte {
	var b strings.Builder
	i := 0
	for _, l := range lines {
		for part := range strings.SplitSeq(l, "\n") {
			ts := start.Add(time.Duration(i) * time.Microsecond).UTC().Format(time.RFC3339Nano)
			fmt.Fprintf(&b, "%s stdout F %s\n", ts, part)
			i++
		}
	}
	return []byte(b.String())
}

// applyLogs applies the kwok Logs object that points kwok at the files.
func (c *Cluster) applyLogs(ctx context.Context, namespace, pod string, owner *corev1.Pod, containers []string) error {
	var entries []map[string]any
	for _, container := range containers {
		e := map[string]any{
			"logsFile":         c.logFile(namespace, pod, container, false),
			"previousLogsFile": c.logFile(namespace, pod, container, true),
		}
		if container != AnyContainer {
			e["containers"] = []string{container}
		}
		entries = append(entries, e)
	}
	meta := map[string]any{"name": pod, "namespace": namespace}
	if owner != nil {
		meta["ownerReferences"] = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID,
		}}
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": logsResource.GroupVersion().String(),
		"kind":       "Logs",
		"metadata":   meta,
		"spec":       map[string]any{"logs": entries},
	})
	if err != nil {
		return fmt.Errorf("encode Logs: %w", err)
	}
	dyn, err := c.dynamicClient()
	if err != nil {
		return err
	}
	force := true
	_, err = dyn.Resource(logsResource).Namespace(namespace).Patch(ctx, pod, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply kwok Logs: %w", err)
	}
	return nil
}

// waitLogsServed waits until kwok, which learns of Logs objects through a
// watch, serves the pod's logs: a first SetLogs would otherwise race with
// the caller's first `kubectl logs`.
func (c *Cluster) waitLogsServed(ctx context.Context, p *corev1.Pod, logs map[string]ContainerLog) error {
	container := ""
	for _, ctr := range p.Spec.Containers {
		if _, ok := logs[ctr.Name]; ok {
			container = ctr.Name
			break
		}
	}
	if container == "" {
		if _, ok := logs[AnyContainer]; !ok || len(p.Spec.Containers) == 0 {
			return nil // no container of the pod has a log
		}
		container = p.Spec.Containers[0].Name
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	// kwok takes well under a second; a minute means it will not.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	one := int64(1)
	opts := &corev1.PodLogOptions{Container: container, LimitBytes: &one}
	return c.poll(ctx, fmt.Sprintf("logs of %s/%s to be served", p.Namespace, p.Name), nil, c.named(Kwok), func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).DoRaw(ctx)
		return err
	})
}

// CrashLoopLastLine ends the log of every pod in StateCrashLoop: the reason
// its container exits with code 1.
const CrashLoopLastLine = "Error: load configuration /etc/app/config.yaml: database.url: required key is missing"

// CrashLoopLog is the log KeepCrashLogs gives each container of a pod in
// StateCrashLoop: every instance starts, reads its configuration and
// exits on the same error, so the current and the previous log end alike.
func CrashLoopLog() ContainerLog {
	run := []string{
		`level=INFO msg="starting" version=1.4.2 pid=1`,
		`level=INFO msg="loading configuration" path=/etc/app/config.yaml`,
		`level=ERROR msg="invalid configuration" path=/etc/app/config.yaml err="database.url: required key is missing"`,
		CrashLoopLastLine,
	}
	return ContainerLog{Current: run, Previous: slices.Clone(run)}
}
