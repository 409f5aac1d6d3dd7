package target

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func annotated(a map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAnnotations(a)
	return u
}

func TestHookOf(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		want        hookRule
	}{
		{"not a hook", map[string]string{"team": "web"}, hookRule{}},
		{"helm post-install, default policy", map[string]string{helmHook: "post-install"}, hookRule{}},
		{"helm deleted on success", map[string]string{helmHook: "pre-install,pre-upgrade", helmDeletePolicy: "before-hook-creation, hook-succeeded"},
			hookRule{deletedOnSuccess: "deleted, as a hook is once it succeeded (helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded)"}},
		{"helm test", map[string]string{helmHook: "test"},
			hookRule{skip: "a hook that does not run on install, upgrade or sync (helm.sh/hook: test)"}},
		{"helm rollback and delete", map[string]string{helmHook: "pre-rollback, post-delete", helmDeletePolicy: "hook-succeeded"},
			hookRule{skip: "a hook that does not run on install, upgrade or sync (helm.sh/hook: pre-rollback,post-delete)"}},
		{"helm deleted either way", map[string]string{helmHook: "post-upgrade", helmDeletePolicy: "hook-succeeded,hook-failed"},
			hookRule{skip: "a hook deleted whether it succeeds or fails (helm.sh/hook-delete-policy: hook-succeeded,hook-failed), so its tool judges it"}},
		{"argo PostSync deleted on success", map[string]string{argoHook: "PostSync", argoDeletePolicy: "HookSucceeded"},
			hookRule{deletedOnSuccess: "deleted, as a hook is once it succeeded (argocd.argoproj.io/hook-delete-policy: HookSucceeded)"}},
		{"argo SyncFail", map[string]string{argoHook: "SyncFail"},
			hookRule{skip: "a hook that does not run on install, upgrade or sync (argocd.argoproj.io/hook: SyncFail)"}},
		{"argo Skip", map[string]string{argoHook: "Skip"},
			hookRule{skip: "a hook that does not run on install, upgrade or sync (argocd.argoproj.io/hook: Skip)"}},
		{"argo Sync, kept", map[string]string{argoHook: "Sync", argoDeletePolicy: "BeforeHookCreation"}, hookRule{}},
		{"helm policy names argo's words", map[string]string{helmHook: "post-install", helmDeletePolicy: "HookSucceeded"}, hookRule{}},
	}
	for _, c := range cases {
		if got := hookOf(annotated(c.annotations)); got != c.want {
			t.Errorf("%s: hookOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}
