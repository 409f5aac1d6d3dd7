package target

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/check"
)

func TestKindOf(t *testing.T) {
	for typ, want := range map[string]string{
		"deploy": "Deployment", "deployments": "Deployment", "Deployment": "Deployment",
		"deployments.apps": "Deployment", "deployment.v1.apps": "Deployment",
		"sts": "StatefulSet", "ds": "DaemonSet", "jobs.batch": "Job", "job": "Job",
		"rs": "ReplicaSet", "po": "Pod", "pods": "Pod",
		"cronjob": "CronJob", "cj": "CronJob", "cronjobs.batch": "CronJob",
		"svc": "", "cronjobs.apps": "", "deployments.batch": "", "jobs.apps": "",
	} {
		got, ok := KindOf(typ)
		if got != want || ok != (want != "") {
			t.Errorf("KindOf(%q) = %q, %v; want %q", typ, got, ok, want)
		}
	}
}

// Bad TYPE/NAME arguments are the user's error, found without a cluster.
func TestParseArgs(t *testing.T) {
	p, err := Parse(Input{Args: []string{"deploy/web", "db-0"}, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.args, []string{"deploy/web", "pod/db-0"}) || !reflect.DeepEqual(p.Namespaces(), []string{"shop"}) {
		t.Errorf("plan = %+v", p)
	}
	if p, err := Parse(Input{Args: []string{"db-0", "db-1"}}); err != nil || !p.Empty() {
		t.Errorf("plain pod names: %+v, %v; want an empty plan", p, err)
	}
	for arg, want := range map[string]string{
		"deploy/":      `invalid argument "deploy/": want POD_NAME or TYPE/NAME`,
		"/web":         `invalid argument "/web": want POD_NAME or TYPE/NAME`,
		"deploy/web/x": `invalid argument "deploy/web/x": want POD_NAME or TYPE/NAME`,
	} {
		_, err := Parse(Input{Args: []string{arg}, Namespace: "shop"})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want %q", arg, err, want)
		}
	}
}

const manifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: web}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
# an empty document
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: db}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: app, image: migrate}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: settings}
- apiVersion: example.com/v1
  kind: Widget
  metadata: {name: gadget}
`

// A multi-document manifest on stdin: every object is a target, in its
// own namespace (or -n's), or in none when its kind is cluster-scoped, and
// a List is read item by item, as by kubectl get -f.
func TestParseManifestOnStdin(t *testing.T) {
	p, err := Parse(Input{Filenames: []string{"-"}, Stdin: strings.NewReader(manifest), Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeRoot)
	getter := genericclioptions.NewTestConfigFlags().WithRESTMapper(mapper)
	want := []check.Target{{Kind: "Deployment", Namespace: "shop", Name: "web"},
		{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web"},
		{Kind: "Job", Namespace: "db", Name: "migrate"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
		{APIVersion: "example.com/v1", Kind: "Widget", Name: "gadget"}}
	if got, err := Resolve(getter, p); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("targets = %+v, %v; want %+v", got, err, want)
	}
	// Another context's namespace places the objects without one.
	want[0].Namespace, want[1].Namespace, want[3].Namespace = "prod", "prod", "prod"
	if got, err := Resolve(getter, p.In("prod")); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("targets in prod = %+v, %v; want %+v", got, err, want)
	}
	// With -n given, an object of another namespace is refused.
	_, err = Parse(Input{Filenames: []string{"-"}, Stdin: strings.NewReader(manifest), Namespace: "shop", Explicit: true})
	if err == nil || !strings.Contains(err.Error(), `the namespace from the provided object "db" does not match the namespace "shop"`) {
		t.Errorf("explicit -n: error = %v", err)
	}
}

// Folders are read as by kubectl: their .yaml, .yml and .json files, the
// subfolders only with -R; a path that is not there, or a document that
// does not decode, is the user's error.
func TestParseFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\n")
	write("notes.txt", "not a manifest")
	write("sub/b.yml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\n")
	for recursive, want := range map[bool]int{false: 1, true: 2} {
		p, err := Parse(Input{Filenames: []string{dir}, Recursive: recursive, Namespace: "ns"})
		if err != nil || len(p.files) != want {
			t.Errorf("recursive %v: %+v, %v; want %d targets", recursive, p, err, want)
		}
	}
	if _, err := Parse(Input{Filenames: []string{filepath.Join(dir, "nope.yaml")}}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	write("bad.yaml", "kind: [")
	if _, err := Parse(Input{Filenames: []string{filepath.Join(dir, "bad.yaml")}}); err == nil {
		t.Error("a manifest that does not decode is accepted")
	}
	write("noname.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: x-}\n")
	if _, err := Parse(Input{Filenames: []string{filepath.Join(dir, "noname.yaml")}}); err == nil || !strings.Contains(err.Error(), "has no name") {
		t.Errorf("generateName: %v", err)
	}
}

// Resolve maps TYPE/NAME arguments with the cluster's REST mapping, in
// the namespace given, without reading the objects.
func TestResolve(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Service"},
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c"}
	cfg.CurrentContext = "c"
	getter := genericclioptions.NewTestConfigFlags().WithRESTMapper(mapper).
		WithClientConfig(clientcmd.NewDefaultClientConfig(*cfg, nil))

	p, err := Parse(Input{Args: []string{"deployments/web", "db-0"}, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(getter, p)
	want := []check.Target{{Kind: "Deployment", Namespace: "shop", Name: "web"}, {Kind: "Pod", Namespace: "shop", Name: "db-0"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve() = %+v, %v; want %+v", got, err, want)
	}
}

// Hooks of a rendered chart: a test hook is skipped and said, a hook
// deleted once it succeeds is a target whose absence is noted, and a
// hook kept after it runs is a plain target.
func TestParseHooks(t *testing.T) {
	chart := `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: hook-succeeded}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-test
  annotations: {helm.sh/hook: test}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: seed
  namespace: db
  annotations: {helm.sh/hook: post-install}
`
	p, err := Parse(Input{Filenames: []string{"-"}, Stdin: strings.NewReader(chart), Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := []check.Target{{Kind: "Job", Name: "migrate"}, {Kind: "Job", Namespace: "db", Name: "seed"}}
	if !reflect.DeepEqual(p.files, want) {
		t.Errorf("targets = %+v, want %+v", p.files, want)
	}
	skipped := []string{"pod/web-test in STDIN is a hook that does not run on install, upgrade or sync (helm.sh/hook: test): not judged"}
	if !reflect.DeepEqual(p.Skipped(), skipped) {
		t.Errorf("skipped = %q, want %q", p.Skipped(), skipped)
	}
	deleted := map[check.Target]string{{Kind: "Job", Name: "migrate"}: "deleted, as a hook is once it succeeded (helm.sh/hook-delete-policy: hook-succeeded)"}
	if !reflect.DeepEqual(p.DeletedOnSuccess(), deleted) {
		t.Errorf("deleted on success = %v, want %v", p.DeletedOnSuccess(), deleted)
	}
}
