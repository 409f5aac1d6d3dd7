package checks

import (
	"strings"
	"testing"
	"time"
)

// hookJob is a Job of a rendered chart or an Argo CD source, annotated as a
// hook; annotations go on the Job itself.
func hookJob(name string, annotations map[string]string) string {
	return strings.Replace(jobYAML(name, nil), "metadata:\n  name: "+name+"\n",
		"metadata:\n  name: "+name+"\n"+annotationsYAML("  ", annotations), 1)
}

// A manifest rendered with its hooks (helm template, an Argo CD source)
// where the tool already ran them: a hook deleted once it succeeded is
// met by its absence, a hook that never runs on install (a Helm test, an
// Argo CD SyncFail) is said once and not judged, and a hook that stays
// after it runs is waited for like any object.
func TestHooksJudgedByTheirDeletePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tool, deleted, never string }{
		{"helm",
			hookJob("migrate", map[string]string{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}),
			hookJob("smoke", map[string]string{"helm.sh/hook": "test"})},
		{"argocd",
			hookJob("migrate", map[string]string{"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}),
			hookJob("smoke", map[string]string{"argocd.argoproj.io/hook": "SyncFail"})},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			web := deploymentYAML("web", "registry.example/web:1", 1, nil)
			// The tool applied the release and deleted the hook that succeeded.
			env.Apply(t, ns, web)
			rendered := writeFile(t, "rendered.yaml", web+"---\n"+tc.deleted+"---\n"+tc.never)
			r := check(t, "-n", ns, "-f", rendered, "--until", "ready", "--timeout", "2m")
			wantVerdict(t, r, 0, "met")
			wantStderr(t, r, "podsync: job/smoke in "+rendered+" is a hook that does not run on install, upgrade or sync (",
				"job/migrate: deleted, as a hook is once it succeeded (")
			if strings.Contains(r.Stderr, "does not exist (yet)") {
				t.Errorf("a hook is waited for\n%s", r)
			}

			kept := hookJob("seed", map[string]string{"helm.sh/hook": "post-install"})
			r = check(t, "-n", ns, "-f", writeFile(t, "kept.yaml", web+"---\n"+kept), "--until", "ready", "--timeout", "10s")
			wantVerdict(t, r, 3, "not met")
			wantTook(t, r, time.Minute)
			wantStderr(t, r, "job/seed: does not exist (yet)")
		})
	}
}
