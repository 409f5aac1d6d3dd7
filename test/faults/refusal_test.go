package faults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// requestTimeout is the --request-timeout of the refusal cases: each must
// end well within it (the silent server's case waits for it).
const requestTimeout = 20 * time.Second

// A cluster that cannot be used ends the run with exit 1 and one line on
// stderr that says why, within --request-timeout.
func TestRefusals(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("web", true, nil))
	admin, ca := tc.adminAuth(t)
	listOnly := tc.tokenKubeconfig(t, tc.serviceAccountToken(t, ns, "list-only", "list"), ns)
	nsOnly := tc.tokenKubeconfig(t, tc.serviceAccountToken(t, ns, "ns-only", "list", "watch"), ns)
	nobody := tc.tokenKubeconfig(t, tc.serviceAccountToken(t, ns, "nobody"), ns)
	user := func(verb, scope string) string {
		return `cannot ` + verb + ` resource "pods" in API group "" ` + scope
	}
	cases := []struct {
		name       string
		kubeconfig string
		args       []string
		want       []string // in the one stderr line
	}{
		{"unreachable server", writeKubeconfig(t, closedPort(t), ca, admin, ns), nil,
			[]string{"error: list pods at https://127.0.0.1:", "connection refused"}},
		{"server that never answers", writeKubeconfig(t, silentServer(t), ca, admin, ns), []string{"--request-timeout=3s"},
			[]string{"error: list pods", "https://127.0.0.1:", "no answer within 3s (--request-timeout)"}},
		{"wrong CA", writeKubeconfig(t, tc.Cluster.Server, strangerCA(t), admin, ns), nil,
			[]string{"error: list pods at " + tc.Cluster.Server + ": ", "tls: failed to verify certificate", "certificate signed by unknown authority"}},
		{"bad token", tc.tokenKubeconfig(t, "not-a-valid-token", ns), nil,
			[]string{"error: list pods: the server did not accept the credentials", "Unauthorized"}},
		{"may list but not watch", listOnly, nil,
			[]string{"error: watch pods: ", user("watch", `in the namespace "`+ns+`"`)}},
		{"may list but not watch, -o json", listOnly, []string{"-o", "json"},
			[]string{"error: watch pods: ", user("watch", `in the namespace "`+ns+`"`)}},
		{"server that never answers, -o json", writeKubeconfig(t, silentServer(t), ca, admin, ns), []string{"--request-timeout=3s", "-o", "json"},
			[]string{"error: list pods", "https://127.0.0.1:", "no answer within 3s (--request-timeout)"}},
		{"unreachable server, -o json", writeKubeconfig(t, closedPort(t), ca, admin, ns), []string{"-o", "json"},
			[]string{"error: list pods at https://127.0.0.1:", "connection refused"}},
		{"may not list in the namespace", nobody, nil,
			[]string{"error: list pods: ", user("list", `in the namespace "`+ns+`"`)}},
		{"may not list across namespaces", nsOnly, []string{"-A"},
			[]string{"error: list pods: ", user("list", "at the cluster scope")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--request-timeout=" + requestTimeout.String()}, c.args...)
			r := tc.PodsyncEnv(t, 2*time.Minute, []string{"KUBECONFIG=" + c.kubeconfig}, args...)
			t.Logf("exit %d after %s: %s", r.Code, r.Took.Round(time.Millisecond), strings.TrimSpace(r.Stderr))
			if r.Code != 1 {
				t.Errorf("exit code %d, want 1\n%s", r.Code, r)
			}
			lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
			if len(lines) != 1 {
				t.Errorf("stderr has %d lines, want 1\n%s", len(lines), r)
			}
			for _, w := range c.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("stderr does not say %q\n%s", w, r)
				}
			}
			if r.Took > requestTimeout {
				t.Errorf("took %s, longer than --request-timeout %s", r.Took, requestTimeout)
			}
		})
	}
	// Listing is all --once needs: the list-only user may use it, also
	// where the list would be streamed (a watch) if the user could watch.
	r := tc.PodsyncEnv(t, 2*time.Minute, []string{"KUBECONFIG=" + listOnly}, "--once")
	if r.Code != 0 || !strings.Contains(r.Stdout, "SYNC ") || r.Stderr != "" {
		t.Errorf("--once as a user who may only list: want exit 0, a SYNC line and nothing on stderr\n%s", r)
	}
	r = tc.PodsyncEnv(t, 2*time.Minute, []string{"KUBECONFIG=" + listOnly}, "--once", "-o", "name")
	if r.Code != 0 || r.Stdout != "pod/web synced\n" || r.Stderr != "" {
		t.Errorf("--once -o name as a user who may only list: want exit 0, pod/web synced and nothing on stderr\n%s", r)
	}
}

// The bearer token never shows, not even at -v=9, which logs every
// request with its headers.
func TestTokenNeverShown(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	createPod(t, tc.cs, ns, newPod("web", true, nil))
	token := tc.serviceAccountToken(t, ns, "reader", "list", "watch")
	withToken := []string{"KUBECONFIG=" + tc.tokenKubeconfig(t, token, ns)}
	_, ca := tc.adminAuth(t)
	noCreds := []string{"KUBECONFIG=" + writeKubeconfig(t, tc.Cluster.Server, ca, &clientcmdapi.AuthInfo{}, ns)}
	const wrong = "wrong-token-7f3a9c1e5b2d"
	secrets := []string{token, token[strings.LastIndex(token, ".")+1:], wrong}

	runs := map[string]harness.Result{
		"kubeconfig token, --once":  tc.PodsyncEnv(t, 2*time.Minute, withToken, "-v=9", "--once"),
		"--token flag, --once":      tc.PodsyncEnv(t, 2*time.Minute, noCreds, "-v=9", "--once", "--token="+token),
		"wrong --token, refused":    tc.PodsyncEnv(t, 2*time.Minute, noCreds, "-v=9", "--once", "--token="+wrong),
		"kubeconfig token, stream":  streamOnce(t, tc, ns, withToken),
		"kubeconfig token, summary": tc.PodsyncEnv(t, 2*time.Minute, withToken, "-v=9", "--until", "ready", "--timeout=2s"),
	}
	wantCode := map[string]int{"wrong --token, refused": 1, "kubeconfig token, stream": 130, "kubeconfig token, summary": 3}
	for name, r := range runs {
		if r.Code != wantCode[name] {
			t.Errorf("%s: exit code %d, want %d\n%s", name, r.Code, wantCode[name], r)
		}
		// The check can fail: the headers are logged, with the token masked.
		if !strings.Contains(r.Stderr, "Authorization") || !strings.Contains(r.Stderr, "<masked>") {
			t.Errorf("%s: -v=9 did not log the masked Authorization header\n%s", name, r)
		}
		for _, s := range secrets {
			if strings.Contains(r.Stdout, s) || strings.Contains(r.Stderr, s) {
				t.Errorf("%s: the token (or its signature) appears in the output", name)
			}
		}
	}
}

// streamOnce streams at -v=9 until one change is reported, then SIGINT.
func streamOnce(t *testing.T, tc *testCluster, ns string, extraEnv []string) harness.Result {
	t.Helper()
	s := tc.StartEnv(t, extraEnv, "-v=9")
	s.WaitLine(`^SYNC\s+web\s`, 2*time.Minute)
	if _, err := setCounter(context.Background(), tc.cs, ns, "web", 1); err != nil {
		t.Fatal(err)
	}
	s.WaitLine(`^UPDATE\s+web\s`, 2*time.Minute)
	return s.Stop(syscall.SIGINT)
}

// serviceAccountToken creates a service account in ns that may do verbs
// on pods there (nothing, without verbs) and returns a token for it.
func (tc *testCluster) serviceAccountToken(t *testing.T, ns, name string, verbs ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	if _, err := tc.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(verbs) > 0 {
		role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}}}
		if _, err := tc.cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: meta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		if _, err := tc.cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tc.waitAllowed(t, ns, name, verbs[0])
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	tr, err := tc.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// waitAllowed waits until the RBAC authorizer has seen a new binding.
func (tc *testCluster) waitAllowed(t *testing.T, ns, sa, verb string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"},
	}}
	harness.Eventually(t, time.Minute, harness.Text(sa+" to be allowed to "+verb+" pods"), func() bool {
		r, err := tc.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed
	})
}
