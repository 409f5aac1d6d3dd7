//go:build unix

package localcluster

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// stageSelectorValues returns the values of the selector expression on key.
func stageSelectorValues(t *testing.T, stage map[string]any, key string) (op string, values []string) {
	t.Helper()
	spec, _ := stage["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		if m["key"] != key {
			continue
		}
		op, _ = m["operator"].(string)
		vals, _ := m["values"].([]any)
		for _, v := range vals {
			values = append(values, v.(string))
		}
		return op, values
	}
	return "", nil
}

var annotationKey = `.metadata.annotations["podsync.test/state"]`

func TestCustomStagesCoverEveryState(t *testing.T) {
	docs, err := readCustomStages()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	names := map[string]bool{}
	for _, d := range docs {
		stage := d.(map[string]any)
		name := stage["metadata"].(map[string]any)["name"].(string)
		if names[name] {
			t.Errorf("stage name %s used twice", name)
		}
		names[name] = true
		op, values := stageSelectorValues(t, stage, annotationKey)
		if op != "In" || len(values) != 1 {
			t.Errorf("stage %s: want selector %s In [one state], got %s %v", name, annotationKey, op, values)
			continue
		}
		if !slices.Contains(States(), values[0]) {
			t.Errorf("stage %s selects unknown state %q", name, values[0])
		}
		if dop, _ := stageSelectorValues(t, stage, ".metadata.deletionTimestamp"); dop != "DoesNotExist" {
			t.Errorf("stage %s must leave terminating pods to kwok's pod-delete stage", name)
		}
		seen[values[0]]++
	}
	for _, s := range States() {
		if seen[s] == 0 {
			t.Errorf("no stage for state %q", s)
		}
	}
}

func TestShippedPodStagesLeaveCustomStatesAlone(t *testing.T) {
	mod := t.TempDir()
	writeStageSet(t, mod, "node/fast", `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
`)
	writeStageSet(t, mod, "node/heartbeat-with-lease", `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-heartbeat}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector: {}
`)
	writeStageSet(t, mod, "pod/general", `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
`)
	out := filepath.Join(t.TempDir(), "kwok.yaml")
	if err := writeKwokConfig(out, mod, "general", map[string]any{"cidr": "10.0.0.0/8"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, raw := range bytes.Split(data, []byte("---\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("document is not JSON: %v\n%s", err, raw)
		}
		if doc["kind"] == "KwokConfiguration" {
			continue
		}
		byName[doc["metadata"].(map[string]any)["name"].(string)] = doc
	}
	for name, wantExcluded := range map[string]bool{"pod-ready": true, "pod-delete": false, "node-initialize": false, "podsync-never-ready": false} {
		stage, ok := byName[name]
		if !ok {
			t.Fatalf("stage %s missing from kwok configuration", name)
		}
		op, values := stageSelectorValues(t, stage, annotationKey)
		excluded := op == "NotIn" && slices.Equal(values, States())
		if excluded != wantExcluded {
			t.Errorf("stage %s: annotation selector %s %v, want excluded=%v", name, op, values, wantExcluded)
		}
	}
}

func writeStageSet(t *testing.T, mod, set, stages string) {
	t.Helper()
	dir := filepath.Join(mod, "kustomize", "stage", filepath.FromSlash(set))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- stages.yaml\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stages.yaml"), []byte(stages), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompletedPodsAreNotReady(t *testing.T) {
	stage := func(name string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"next": map[string]any{
				"statusTemplate": "containerStatuses:\n- name: app\n  ready: true\nphase: Succeeded\n",
			}},
		}
	}
	complete, ready := stage("pod-complete"), stage("pod-ready")
	completeLikeKubelet(complete)
	completeLikeKubelet(ready)
	tmpl := complete["spec"].(map[string]any)["next"].(map[string]any)["statusTemplate"].(string)
	for _, want := range []string{"  ready: false\n", "phase: Succeeded\nconditions:\n- type: Ready\n  status: \"False\"\n  reason: PodCompleted\n", "- type: ContainersReady\n"} {
		if !bytes.Contains([]byte(tmpl), []byte(want)) {
			t.Errorf("pod-complete template lacks %q:\n%s", want, tmpl)
		}
	}
	if got := ready["spec"].(map[string]any)["next"].(map[string]any)["statusTemplate"]; got != stage("x")["spec"].(map[string]any)["next"].(map[string]any)["statusTemplate"] {
		t.Errorf("pod-ready stage changed:\n%s", got)
	}
}
