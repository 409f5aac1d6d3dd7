package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/internal/localcluster"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// Generous bounds: the machine is shared and kwok takes 1-5 s per pod step.
const (
	// runLimit is how long any one podsync run may take before the test
	// gives up on it; checks pass --timeout well below it.
	runLimit = 5 * time.Minute
	// settle is how long a test waits for the cluster to reach a state.
	settle = 3 * time.Minute
)

// check runs `kubectl podsync ARGS` to its end and logs the verdict time.
func check(t *testing.T, args ...string) harness.Result {
	t.Helper()
	r := env.Podsync(t, runLimit, args...)
	t.Logf("kubectl podsync %s: exit %d after %s", strings.Join(args, " "), r.Code, r.Took.Round(time.Millisecond))
	return r
}

// wantVerdict asserts the exit code and the summary's verdict line.
func wantVerdict(t *testing.T, r harness.Result, code int, word string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.Code, code, r)
	}
	line := fmt.Sprintf("Verdict:  %s (exit %d) after ", word, code)
	if !strings.Contains(r.Stderr, line) {
		t.Fatalf("stderr has no %q\n%s", line, r)
	}
}

// wantStderr asserts that stderr holds every one of the texts.
func wantStderr(t *testing.T, r harness.Result, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("stderr has no %q\n%s", s, r)
		}
	}
}

// wantLines asserts that at least n lines of stdout match re.
func wantLines(t *testing.T, stdout, re string, n int) {
	t.Helper()
	if got := harness.CountLines(stdout, re); got < n {
		t.Errorf("%d stdout lines match %q, want at least %d\n--- stdout\n%s", got, re, n, stdout)
	}
}

// wantTook asserts a generous upper bound on the time to verdict.
func wantTook(t *testing.T, r harness.Result, limit time.Duration) {
	t.Helper()
	if r.Took > limit {
		t.Errorf("verdict after %s, want within %s\n%s", r.Took.Round(time.Millisecond), limit, r)
	}
}

// summary is the JSON summary on stderr's last line, decoded with the
// field names the contract documents (not the product's own types, so a
// renamed field fails here).
type summary struct {
	Verdict         string          `json:"verdict"`
	ExitCode        int             `json:"exitCode"`
	DurationSeconds float64         `json:"durationSeconds"`
	Pods            int             `json:"pods"`
	Statuses        map[string]int  `json:"statuses"`
	Events          map[string]int  `json:"events"`
	Reason          string          `json:"reason"`
	Unsatisfied     []summaryPod    `json:"unsatisfied"`
	Targets         []summaryTarget `json:"targets"`
}

type summaryTarget struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason"`
	Rule       string `json:"rule"`
}

type summaryPod struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Phase           string `json:"phase"`
	UnmetConditions []struct {
		Condition string `json:"condition"`
		Want      string `json:"want"`
		Got       string `json:"got"`
		Reason    string `json:"reason"`
		Message   string `json:"message"`
	} `json:"unmetConditions"`
	Containers []summaryContainer `json:"containers"`
	Events     []summaryEvent     `json:"events"`
}

type summaryContainer struct {
	Name            string `json:"name"`
	State           string `json:"state"`
	Ready           bool   `json:"ready"`
	Reason          string `json:"reason"`
	Message         string `json:"message"`
	ExitCode        *int32 `json:"exitCode"`
	RestartCount    int32  `json:"restartCount"`
	LastTermination *struct {
		Reason   string `json:"reason"`
		ExitCode int32  `json:"exitCode"`
	} `json:"lastTermination"`
}

type summaryEvent struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count"`
}

// lastLineJSON decodes stderr's last line as the JSON summary.
func lastLineJSON(t *testing.T, r harness.Result) summary {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	var s summary
	dec := json.NewDecoder(strings.NewReader(last))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("stderr's last line is not the JSON summary: %v\n%s", err, r)
	}
	if dec.More() {
		t.Fatalf("stderr's last line holds more than one JSON value\n%s", r)
	}
	return s
}

// deploymentYAML is a Deployment NAME of replicas pods labelled app=NAME,
// with one container "app"; annotations go on the pod template.
func deploymentYAML(name, image string, replicas int, annotations map[string]string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
%[4]s    spec:
      containers:
      - name: app
        image: %[2]s
`, name, image, replicas, annotationsYAML("      ", annotations))
}

// jobYAML is a Job NAME of one pod that is not restarted; annotations go
// on the pod template.
func jobYAML(name string, annotations map[string]string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
spec:
  backoffLimit: 0
  template:
    metadata:
      labels: {app: %[1]s}
%[2]s    spec:
      restartPolicy: Never
      containers:
      - name: app
        image: registry.example/batch:1
`, name, annotationsYAML("      ", annotations))
}

func annotationsYAML(indent string, annotations map[string]string) string {
	if len(annotations) == 0 {
		return ""
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(indent + "annotations:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s  %s: %q\n", indent, k, annotations[k])
	}
	return b.String()
}

// state is the annotation that puts a pod into one of kwok's broken states.
func state(s string) map[string]string {
	return map[string]string{localcluster.StateAnnotation: s}
}

// pods lists the pods of ns matching selector through the API.
func pods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := env.Clientset(t).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods %s in %s: %v", selector, ns, err)
	}
	return list.Items
}

// waitPods waits until exactly n pods match, none being deleted, each
// satisfying ok.
func waitPods(t *testing.T, ns, selector string, n int, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	harness.Eventually(t, settle, harness.Text(fmt.Sprintf("%d pods %s to be %s", n, selector, what)), func() bool {
		list := pods(t, ns, selector)
		if len(list) != n {
			return false
		}
		for i := range list {
			if list[i].DeletionTimestamp != nil || !ok(&list[i]) {
				return false
			}
		}
		return true
	})
}

// rolledOut waits for `kubectl rollout status`, for a starting point.
func rolledOut(t *testing.T, ns, deploy string) {
	t.Helper()
	env.Kubectl(t, "rollout", "status", "-n", ns, "deployment/"+deploy, "--timeout="+settle.String())
}

// currentReplicaSet returns the Deployment's ReplicaSet whose pod template
// runs image.
func currentReplicaSet(t *testing.T, ns, deploy, image string) appsv1.ReplicaSet {
	t.Helper()
	var found *appsv1.ReplicaSet
	harness.Eventually(t, settle, harness.Text("a ReplicaSet of "+deploy+" running "+image), func() bool {
		list, err := env.Clientset(t).AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + deploy})
		if err != nil {
			t.Fatalf("list replicasets: %v", err)
		}
		for i := range list.Items {
			if list.Items[i].Spec.Template.Spec.Containers[0].Image == image {
				found = &list.Items[i]
				return true
			}
		}
		return false
	})
	return *found
}

// restarts is the restart count of the pod's first container.
func restarts(p *corev1.Pod) int32 {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// startWatching starts a check and returns once its watch is open, so that
// everything created afterwards is new to it (ADD, not SYNC). -v=6 makes
// client-go log each request on stderr, the watch among them.
func startWatching(t *testing.T, args ...string) *harness.Stream {
	t.Helper()
	s := env.Start(t, append([]string{"-v=6"}, args...)...)
	s.WaitStderr(`"Response" verb="GET" url="[^"]*watch=true[^"]*" status="200 OK"`, time.Minute)
	return s
}

// wantCompletedUnready checks that a Succeeded pod is no longer Ready, as a
// kubelet reports it (Ready and ContainersReady False, reason PodCompleted;
// the local cluster's kwok stages do this): the trap for `kubectl wait
// --for=condition=Ready` on Job pods.
func wantCompletedUnready(t *testing.T, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := env.Clientset(t).CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s is %s, not Succeeded", name, p.Status.Phase)
	}
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && (c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted") {
			t.Fatalf("completed pod %s has %s=%s (%s), want False (PodCompleted)", name, c.Type, c.Status, c.Reason)
		}
	}
}
