//go:build unix

package localcluster

import (
	"bytes"
	"debug/buildinfo"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// StateAnnotation on a pod selects one of our own kwok stages instead of
// kwok's normal pod lifecycle, to put the pod in a state a kubelet would
// report for a broken workload.
const StateAnnotation = "podsync.test/state"

// Values of StateAnnotation. The STATUS column `kubectl get pods` shows for
// each is in the comment.
const (
	// StateCrashLoop: the containers run ~1 s, exit 1 (Error), then wait in
	// CrashLoopBackOff ~4 s and start again, so RESTARTS keeps growing.
	StateCrashLoop = "crashloop"
	// StateImagePullBackOff: the pod stays Pending with its containers
	// waiting in ImagePullBackOff, briefly ErrImagePull on every retry.
	StateImagePullBackOff = "imagepullbackoff"
	// StateInitRunning: the first init container runs for ever (Init:0/N).
	// The pod needs at least one init container.
	StateInitRunning = "init-running"
	// StateNeverReady: Running, but Ready stays False (Running, READY 0/N).
	StateNeverReady = "never-ready"
	// StateError: runs ~1 s, then the pod is Failed with its containers
	// terminated with exit code 1 (Error). Meant for restartPolicy Never.
	StateError = "error"
	// StateWaiting: Running, with its containers waiting for ever after
	// one failed start (RESTARTS 1); the waiting reason (the STATUS shown)
	// and message are the pod's annotations ReasonAnnotation (default
	// Waiting) and MessageAnnotation, and the message is also the ended
	// instance's termination message. Tests plant any text there.
	StateWaiting = "waiting"
)

// Annotations that StateWaiting reads.
const (
	ReasonAnnotation  = "podsync.test/reason"
	MessageAnnotation = "podsync.test/message"
)

// States lists every value StateAnnotation understands.
func States() []string {
	return []string{StateCrashLoop, StateImagePullBackOff, StateInitRunning, StateNeverReady, StateError, StateWaiting}
}

// kwok's own shipped stages, read from its module at run time. The node
// stages with leases keep status updates rare; the pod set is chosen by
// Options.PodStages.
var (
	kwokNodeStages = []string{"node/fast", "node/heartbeat-with-lease"}
	kwokPodStages  = map[string]string{"general": "pod/general", "fast": "pod/fast"}
)

//go:embed stages/*.yaml
var customStages embed.FS

// writeKwokConfig writes kwok's configuration: options, kwok's shipped node
// and pod stages (pod stages changed to leave pods with StateAnnotation
// alone) and our custom stages. Every document is written as JSON, which
// kwok's YAML reader accepts.
func writeKwokConfig(dst, moduleDir, podStages string, options map[string]any) error {
	docs := []any{map[string]any{
		"apiVersion": "config.kwok.x-k8s.io/v1alpha1",
		"kind":       "KwokConfiguration",
		"options":    options,
	}}
	sets := append(append([]string{}, kwokNodeStages...), kwokPodStages[podStages])
	for _, set := range sets {
		stages, err := readKwokStageSet(filepath.Join(moduleDir, "kustomize", "stage", filepath.FromSlash(set)))
		if err != nil {
			return err
		}
		for _, s := range stages {
			if err := leaveCustomStatesAlone(s); err != nil {
				return fmt.Errorf("kwok stage set %s: %w", set, err)
			}
			shortenDeletion(s)
			completeLikeKubelet(s)
			docs = append(docs, s)
		}
	}
	custom, err := readCustomStages()
	if err != nil {
		return err
	}
	docs = append(docs, custom...)

	var buf bytes.Buffer
	for _, d := range docs {
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode kwok configuration: %w", err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteString("\n")
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write kwok configuration: %w", err)
	}
	return nil
}

// readKwokStageSet reads the stage files a kwok kustomization lists.
func readKwokStageSet(dir string) ([]map[string]any, error) {
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("read kwok stages: %w", err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(k, &kustomization); err != nil {
		return nil, fmt.Errorf("parse %s/kustomization.yaml: %w", dir, err)
	}
	var stages []map[string]any
	for _, res := range kustomization.Resources {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(res)))
		if err != nil {
			return nil, fmt.Errorf("read kwok stage: %w", err)
		}
		docs, err := decodeYAMLDocs(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("parse kwok stage %s: %w", res, err)
		}
		stages = append(stages, docs...)
	}
	return stages, nil
}

func readCustomStages() ([]any, error) {
	files, err := fs.Glob(customStages, "stages/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list custom stages: %w", err)
	}
	var out []any
	for _, name := range files {
		data, err := customStages.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read custom stage: %w", err)
		}
		docs, err := decodeYAMLDocs(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("parse custom stage %s: %w", path.Base(name), err)
		}
		for _, d := range docs {
			out = append(out, d)
		}
	}
	return out, nil
}

func decodeYAMLDocs(r io.Reader) ([]map[string]any, error) {
	dec := yaml.NewYAMLToJSONDecoder(r)
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// leaveCustomStatesAlone adds "StateAnnotation is not one of ours" to a pod
// stage that acts on live pods. kwok picks among matching stages at random
// by weight, so only disjoint selectors make our states deterministic.
// Deletion stages stay as shipped: they finish deletions of every pod.
func leaveCustomStatesAlone(stage map[string]any) error {
	spec, _ := stage["spec"].(map[string]any)
	ref, _ := spec["resourceRef"].(map[string]any)
	if ref["kind"] != "Pod" {
		return nil
	}
	sel, _ := spec["selector"].(map[string]any)
	if sel == nil {
		return fmt.Errorf("pod stage %v has no selector", stage["metadata"])
	}
	exprs, _ := sel["matchExpressions"].([]any)
	live := false
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		if m["key"] == ".metadata.deletionTimestamp" && m["operator"] == "DoesNotExist" {
			live = true
		}
	}
	if !live {
		return nil
	}
	values := make([]any, 0, len(States()))
	for _, s := range States() {
		values = append(values, s)
	}
	sel["matchExpressions"] = append(exprs, map[string]any{
		"key":      fmt.Sprintf(".metadata.annotations[%q]", StateAnnotation),
		"operator": "NotIn",
		"values":   values,
	})
	return nil
}

// deletionJitterMilliseconds bounds how long kwok takes to finish a pod's deletion.
const deletionJitterMilliseconds = 3000

// shortenDeletion changes kwok's general pod-delete stage, which finishes a
// deletion at a random moment up to the end of the grace period (30 s by
// default), to finish within a few seconds, as a kubelet does for a process
// that exits on SIGTERM. Tests and the demo would otherwise wait up to 30 s
// for every deleted pod.
func shortenDeletion(stage map[string]any) {
	spec, _ := stage["spec"].(map[string]any)
	delay, _ := spec["delay"].(map[string]any)
	from, _ := delay["jitterDurationFrom"].(map[string]any)
	if from["expressionFrom"] != ".metadata.deletionTimestamp" {
		return
	}
	delete(delay, "jitterDurationFrom")
	delay["jitterDurationMilliseconds"] = deletionJitterMilliseconds
}

// kwokModuleDir finds the module folder of the kwok version the binary was
// built from: the module cache after `go install`, else `go mod download`.
func kwokModuleDir(kwokBinary string) (string, error) {
	info, err := buildinfo.ReadFile(kwokBinary)
	if err != nil {
		return "", fmt.Errorf("read build info of %s: %w", kwokBinary, err)
	}
	mod, ver := info.Main.Path, info.Main.Version
	if mod == "" || ver == "" || ver == "(devel)" {
		return "", fmt.Errorf("%s was not built with `go install module@version`, cannot find its stages", kwokBinary)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), escapeModulePath(mod)+"@"+ver)
	if _, err := os.Stat(filepath.Join(dir, "kustomize", "stage")); err == nil {
		return dir, nil
	}
	return downloadModule(mod + "@" + ver)
}

func downloadModule(modVer string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", modVer)
	// Outside any module, so the download cannot touch a go.mod or go.sum.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", modVer, err)
	}
	var res struct{ Dir, Error string }
	if err := json.Unmarshal(out, &res); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", modVer, err)
	}
	if res.Error != "" || res.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", modVer, res.Error)
	}
	return res.Dir, nil
}

// escapeModulePath applies the module cache's case encoding ("!" + lower
// case for each upper-case letter).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// completedConditions are the conditions a kubelet gives a pod that has run
// to completion: it is no longer Ready. kwok's pod-complete stage leaves
// Ready True, which no kubelet reports, and which would let a check for
// `ready` pass on a finished Job pod.
const completedConditions = `
conditions:
- type: Ready
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
`

// completeLikeKubelet changes kwok's pod-complete stage so the completed
// pod's containers and the pod itself are not ready, as with a kubelet.
func completeLikeKubelet(stage map[string]any) {
	meta, _ := stage["metadata"].(map[string]any)
	spec, _ := stage["spec"].(map[string]any)
	next, _ := spec["next"].(map[string]any)
	tmpl, ok := next["statusTemplate"].(string)
	if meta["name"] != "pod-complete" || !ok {
		return
	}
	tmpl = strings.ReplaceAll(tmpl, "ready: true", "ready: false")
	next["statusTemplate"] = strings.TrimRight(tmpl, "\n") + completedConditions
}
