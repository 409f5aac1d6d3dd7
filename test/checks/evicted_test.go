package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// leftBehindJSON is one entry of the JSON summary's leftBehind, with the
// field names the README documents.
type leftBehindJSON struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	OwnerKind string `json:"ownerKind"`
	OwnerName string `json:"ownerName"`
}

// A pod of a Deployment evicted by its kubelet (phase Failed, reason
// Evicted) and replaced by its ReplicaSet is matched and streamed, but not
// judged: the check is met once the Deployment is rolled out, whether it
// names the Deployment or selects its pods by label. It is named once on
// stderr, and in the summary: text, JSON and the GitHub job summary.
func TestEvictedPodIsNotJudged(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Apply(t, ns, deploymentYAML("web", "registry.example/web:1", 2, nil))
	rolledOut(t, ns, "web")
	victim := pods(t, ns, "app=web")[0]
	harness.EndPod(t, env.Clientset(t), ns, victim.Name, harness.Evicted)
	rs := victim.OwnerReferences[0].Name
	harness.Eventually(t, settle, harness.Text("a ready replacement"), func() bool {
		ready := 0
		for _, p := range pods(t, ns, "app=web") {
			if p.DeletionTimestamp == nil && harness.IsReady(&p) {
				ready++
			}
		}
		return ready == 2
	})
	note := "podsync: pod " + ns + "/" + victim.Name + " was evicted and replaced by its ReplicaSet " + rs + "; not judged\n"
	replaced := "Replaced: 1 evicted pod left behind, replaced, not judged: " + ns + "/" + victim.Name + "\n"

	for _, args := range [][]string{{"deploy/web"}, {"-l", "app=web"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			md := filepath.Join(t.TempDir(), "summary.md")
			gh := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + md}
			r := env.PodsyncEnv(t, runLimit, gh, append([]string{"-n", ns, "--until", "ready", "--timeout", "2m", "-o", "json"}, args...)...)
			wantVerdict(t, r, 0, "met")
			wantTook(t, r, time.Minute)
			wantStderr(t, r, note, "Pods:     3 matched", "\n"+replaced)
			if n := strings.Count(r.Stderr, note); n != 1 {
				t.Errorf("the pod is named %d times, want once\n%s", n, r)
			}
			if strings.Contains(r.Stderr, "::error") {
				t.Errorf("an error annotation for a pod that is not judged\n%s", r)
			}
			wantStreamed(t, r, victim.Name)
			var s struct {
				LeftBehind []leftBehindJSON `json:"leftBehind"`
			}
			lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
				t.Fatalf("the JSON summary: %v\n%s", err, r)
			}
			want := leftBehindJSON{Namespace: ns, Name: victim.Name, Reason: "Evicted", Message: harness.Evicted.Message,
				OwnerKind: "ReplicaSet", OwnerName: rs}
			if len(s.LeftBehind) != 1 || s.LeftBehind[0] != want {
				t.Errorf("JSON leftBehind %+v, want [%+v]", s.LeftBehind, want)
			}
			body, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(body), "Replaced: 1 evicted pod left behind, replaced, not judged: "+ns+"/"+victim.Name) {
				t.Errorf("the job summary does not name the pod:\n%s", body)
			}
		})
	}
}

// wantStreamed: stdout (-o json) holds a message about the pod.
func wantStreamed(t *testing.T, r harness.Result, name string) {
	t.Helper()
	for _, line := range strings.Split(r.Stdout, "\n") {
		var ev struct {
			Object corev1.Pod `json:"object"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Object.Name == name {
			return
		}
	}
	t.Errorf("stdout has no message about pod %s\n%s", name, r)
}
