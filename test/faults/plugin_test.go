package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/internal/ghactions"
	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// hangingPlugin is a kubeconfig whose user's credential exec plugin never
// answers, and the file where the plugin writes its process ID.
func hangingPlugin(t *testing.T, tc *testCluster, ns string) (kubeconfig, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	pidFile = filepath.Join(dir, "plugin.pid")
	script := filepath.Join(dir, "hang.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ >"+pidFile+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	user := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	_, ca := tc.adminAuth(t)
	return writeKubeconfig(t, tc.Cluster.Server, ca, user, ns), pidFile
}

// alivePID reports whether the process of pidFile still runs.
func alivePID(t *testing.T, pidFile string) (int, bool) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the plugin never ran: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// A zombie is not running: it has ended and waits to be reaped.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return pid, false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return pid, len(fields) > 0 && fields[0] != "Z"
}

// A credential plugin that never answers: --timeout ends the run with the
// summary, for pods and for TYPE/NAME (whose discovery runs the plugin),
// and the plugin does not outlive podsync.
func TestCredentialPluginNeverAnswers(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	for name, args := range map[string][]string{
		"pods":      {"-l", "app=web"},
		"TYPE/NAME": {"deploy/web"},
	} {
		t.Run(name, func(t *testing.T) {
			kubeconfig, pidFile := hangingPlugin(t, tc, ns)
			r := tc.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kubeconfig}, append(args, "--until", "ready", "--timeout", "4s", "-v=1")...)
			if r.Code != 3 || !strings.Contains(r.Stderr, "Verdict:  not met (exit 3) after 4s") {
				t.Fatalf("exit %d, want 3 with the summary\n%s", r.Code, r)
			}
			took := harness.SinceClock(t, r)
			t.Logf("ended %s after its clock started, %s after kubectl started", took.Round(time.Millisecond), r.Took.Round(time.Millisecond))
			if took > 4*time.Second+endWithin {
				t.Errorf("ended %s after its clock started, want within %s of the 4s timeout", took, endWithin)
			}
			time.Sleep(200 * time.Millisecond)
			if pid, alive := alivePID(t, pidFile); alive {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the credential plugin (pid %d) outlived podsync", pid)
			}
		})
	}
}

// A credential plugin that never answers makes the cluster unusable once
// --request-timeout passes (30s when unset), as one whose first list
// failed: exit 1 with one line, not a wait until --timeout.
func TestCredentialPluginNoAnswerWithinRequestTimeout(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	kubeconfig, pidFile := hangingPlugin(t, tc, ns)
	r := tc.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kubeconfig}, "-l", "app=web", "--until", "ready", "--request-timeout", "2s", "--timeout", "20s")
	want := regexp.MustCompile(`^error: list pods: no answer within 2s \(--request-timeout\) from the API server at https://\S+ or its credential plugin\n$`)
	if r.Code != 1 || !want.MatchString(r.Stderr) {
		t.Fatalf("exit %d, want 1 with one line naming the limit\n%s", r.Code, r)
	}
	// The request's wait began when podsync ran the plugin, which wrote
	// its PID file as it started.
	took := r.Ended.Sub(harness.WrittenAt(t, pidFile))
	t.Logf("ended %s after the plugin started, %s after kubectl started", took.Round(time.Millisecond), r.Took.Round(time.Millisecond))
	if took > 2*time.Second+endWithin {
		t.Errorf("ended %s after the plugin started, want within %s of --request-timeout 2s", took, endWithin)
	}
	time.Sleep(200 * time.Millisecond)
	if pid, alive := alivePID(t, pidFile); alive {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the credential plugin (pid %d) outlived podsync", pid)
	}
}

// A credential plugin that writes workflow commands and a flood on its
// stderr: under GitHub Actions none of its lines runs a command in the
// runner, each is at most 1,000 characters, and at most 64 KiB of it
// reaches podsync's stderr, then one line saying the rest was dropped.
// The plugin answers, so the run itself goes on as usual.
func TestCredentialPluginStderrGuarded(t *testing.T) {
	tc := sharedCluster(t)
	ns := tc.Namespace(t)
	admin, ca := tc.adminAuth(t)
	dir := t.TempDir()
	cred, err := json.Marshal(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
		"status": map[string]string{"clientCertificateData": string(admin.ClientCertificateData), "clientKeyData": string(admin.ClientKeyData)},
	})
	if err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(dir, "cred.json")
	if err := os.WriteFile(credFile, cred, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "noisy.sh")
	body := `#!/bin/sh
{
echo '::error::pwned'
echo '##[add-mask]x'
printf '  ::warning::after spaces\r::notice::after a carriage return\n'
head -c 5000 /dev/zero | tr '\0' a; echo
i=0; while [ $i -lt 2000 ]; do echo "line $i of a plugin that talks too much"; i=$((i+1)); done
echo '::error::late'
} >&2
cat ` + credFile + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	user := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	kubeconfig := writeKubeconfig(t, tc.Cluster.Server, ca, user, ns)
	gh := []string{"KUBECONFIG=" + kubeconfig, "GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + filepath.Join(dir, "summary.md")}
	r := tc.PodsyncEnv(t, time.Minute, gh, "-l", "app=nothing", "--once")
	if r.Code != 0 || !strings.Contains(r.Stderr, "No resources found") {
		t.Fatalf("exit %d, want 0 saying no pod matches\n%s", r.Code, r)
	}
	if cmds := ghactions.Strict(r.Stderr); len(cmds) > 0 {
		t.Errorf("stderr runs %d workflow commands, the first %q %q\n%s", len(cmds), cmds[0].Name, cmds[0].Data, r.Stderr[:min(len(r.Stderr), 2000)])
	}
	if !strings.Contains(r.Stderr, `\::error::pwned`) || !strings.Contains(r.Stderr, `##\[add-mask]x`) {
		t.Errorf("the plugin's lines do not reach stderr, defused\n%s", r.Stderr[:min(len(r.Stderr), 2000)])
	}
	for _, l := range strings.Split(r.Stderr, "\n") {
		if n := len([]rune(l)); n > 1000 {
			t.Errorf("a line of %d characters", n)
			break
		}
	}
	if len(r.Stderr) > 66<<10 || !strings.Contains(r.Stderr, "podsync: a credential plugin wrote more than 64 KiB; the rest is dropped\n") {
		t.Errorf("stderr holds %d bytes, want at most 64 KiB of the plugin's and a line saying the rest was dropped", len(r.Stderr))
	}
	if strings.Contains(r.Stderr, "::error::late") {
		t.Error("the plugin's text past 64 KiB reached stderr")
	}
}
