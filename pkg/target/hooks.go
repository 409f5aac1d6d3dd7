package target

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// The hook annotations of Helm and Argo CD. A manifest rendered with
// `helm template`, or an Argo CD application's source, holds its hooks
// beside the objects that stay: a hook runs once, at a moment its tool
// chooses, and its delete policy may remove it once it has run.
const (
	helmHook         = "helm.sh/hook"
	helmDeletePolicy = "helm.sh/hook-delete-policy"
	argoHook         = "argocd.argoproj.io/hook"
	argoDeletePolicy = "argocd.argoproj.io/hook-delete-policy"
)

// helmInstallHooks are the Helm hooks that run on an install or an
// upgrade; the others (delete, rollback, test) never run then.
var helmInstallHooks = []string{"pre-install", "post-install", "pre-upgrade", "post-upgrade"}

// argoSyncHooks are the Argo CD hooks that run on a sync that succeeds;
// SyncFail runs only when it fails, PostDelete when the application is
// deleted, and Skip is never applied.
var argoSyncHooks = []string{"PreSync", "Sync", "PostSync"}

// hookRule is what a hook's annotations mean for a check: skip says why
// the object is not judged at all; deletedOnSuccess, that its absence
// means it ran and succeeded (its delete policy removes it then, and
// only then).
type hookRule struct {
	skip, deletedOnSuccess string
}

// hookOf reads the hook annotations of a manifest's object.
func hookOf(obj runtime.Object) hookRule {
	m, err := meta.Accessor(obj)
	if err != nil {
		return hookRule{}
	}
	a := m.GetAnnotations()
	if hooks, ok := a[helmHook]; ok {
		return hookRuleOf(helmHook, list(hooks), helmInstallHooks,
			helmDeletePolicy, list(a[helmDeletePolicy]), "hook-succeeded", "hook-failed")
	}
	if hooks, ok := a[argoHook]; ok {
		return hookRuleOf(argoHook, list(hooks), argoSyncHooks,
			argoDeletePolicy, list(a[argoDeletePolicy]), "HookSucceeded", "HookFailed")
	}
	return hookRule{}
}

func hookRuleOf(hookKey string, hooks, running []string, policyKey string, policy []string, succeeded, failed string) hookRule {
	if !slices.ContainsFunc(hooks, func(h string) bool { return slices.Contains(running, h) }) {
		return hookRule{skip: fmt.Sprintf("a hook that does not run on install, upgrade or sync (%s: %s)", hookKey, strings.Join(hooks, ","))}
	}
	onSuccess, onFailure := slices.Contains(policy, succeeded), slices.Contains(policy, failed)
	switch {
	case onSuccess && onFailure:
		return hookRule{skip: fmt.Sprintf("a hook deleted whether it succeeds or fails (%s: %s), so its tool judges it", policyKey, strings.Join(policy, ","))}
	case onSuccess:
		return hookRule{deletedOnSuccess: fmt.Sprintf("deleted, as a hook is once it succeeded (%s: %s)", policyKey, strings.Join(policy, ","))}
	}
	return hookRule{}
}

// list splits a comma-separated annotation value, as Helm and Argo CD do.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
