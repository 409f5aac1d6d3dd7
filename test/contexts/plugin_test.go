package contexts

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-podsync/kubectl-podsync/test/harness"
)

// hungContext is the context whose credential plugin never answers.
const hungContext = "hung"

// hungPluginKubeconfig is the test kubeconfig with one more context,
// hungContext, on podsync-2's cluster, whose user's credential exec plugin
// never answers; the plugin writes its process ID to the file returned.
// Put after a working context, it is never asked for discovery (the
// first usable context maps the targets): the plugin hangs at the
// context's first list.
func hungPluginKubeconfig(t *testing.T) (kubeconfig, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	pidFile = filepath.Join(dir, "plugin.pid")
	script := filepath.Join(dir, "hang.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ >"+pidFile+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos[hungContext] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	cfg.Contexts[hungContext] = &clientcmdapi.Context{Cluster: cfg.Contexts["podsync-2"].Cluster, AuthInfo: hungContext}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, pidFile
}

// pluginGone fails the test if the plugin of pidFile ran and still runs
// (a zombie has ended: it only waits to be reaped).
func pluginGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the credential plugin never ran: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return
	}
	if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] != "Z" {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the credential plugin (pid %d) outlived podsync", pid)
	}
}

// A context whose credential plugin hangs at its first list (after the
// targets were mapped with another context's discovery) is unusable once
// --request-timeout passes: exit 1 naming it, or, with
// --skip-unavailable, the run goes on without it and the check counts it
// as failed. --timeout and SIGINT still end the run at once, and the
// plugin does not outlive podsync.
func TestCredentialPluginHangsAtTheList(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	readyPodEverywhere(t, ns, "web")
	noAnswer := `context hung: list pods: no answer within 2s \(--request-timeout\) from the API server at https://\S+ or its credential plugin`
	for name, target := range map[string][]string{"pods": {"-l", "app=web"}, "TYPE/NAME": {"pod/web"}} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--context", "podsync-1," + hungContext, "-n", ns, "--until", "ready"}, target...)

			kubeconfig, pidFile := hungPluginKubeconfig(t)
			r := env.PodsyncEnv(t, time.Minute, []string{"KUBECONFIG=" + kubeconfig}, append(args, "--request-timeout", "2s", "--timeout", "20s")...)
			wantExit(t, r, 1)
			if !regexp.MustCompile(`(?m)^error: ` + noAnswer + `$`).MatchString(r.Stderr) {
				t.Errorf("stderr does not name the context in one error line\n%s", r)
			}
			// The list's wait began when podsync ran the plugin, which
			// wrote its PID file as it started.
			if took := r.Ended.Sub(harness.WrittenAt(t, pidFile)); took > 2*time.Second+2*time.Second {
				t.Errorf("ended %s after the plugin started, want within a second of --request-timeout 2s", took)
			}
			pluginGone(t, pidFile)

			kubeconfig, pidFile = hungPluginKubeconfig(t)
			r = endsWithVerdict(t, kubeconfig, append(args, "--request-timeout", "2s", "--timeout", "20s", "--skip-unavailable"))
			wantExit(t, r, 4)
			if !regexp.MustCompile(`(?m)^warning: ` + strings.Replace(noAnswer, "context hung: ", `context hung: unavailable, going on without it \(--skip-unavailable\): `, 1) + `$`).MatchString(r.Stderr) {
				t.Errorf("stderr does not say the skip, naming the context\n%s", r)
			}
			wantStderr(t, r, "Verdict:  failed (exit 4)", "Reason:   context hung: unavailable: list pods: no answer within 2s")
			pluginGone(t, pidFile)

			// A --timeout shorter than the wait for an answer ends the run.
			kubeconfig, pidFile = hungPluginKubeconfig(t)
			r = endsWithVerdict(t, kubeconfig, append(args, "--timeout", "3s", "-v=1"))
			wantExit(t, r, 3)
			wantStderr(t, r, "Verdict:  not met (exit 3) after 3s")
			if took := harness.SinceClock(t, r); took > 3*time.Second+2*time.Second {
				t.Errorf("ended %s after its clock started, want within a second of --timeout 3s", took)
			}
			pluginGone(t, pidFile)

			// So does SIGINT, with the summary.
			kubeconfig, pidFile = hungPluginKubeconfig(t)
			s := env.StartEnv(t, []string{"KUBECONFIG=" + kubeconfig, noRaceExitSleep}, args...)
			waitFile(t, pidFile)
			time.Sleep(500 * time.Millisecond)
			sent := time.Now()
			r = s.Stop(syscall.SIGINT)
			if took := time.Since(sent); took > time.Second+time.Second {
				t.Errorf("ended %s after SIGINT, want within a second", took)
			}
			endedSoon(t, s)
			wantExit(t, r, 130)
			wantStderr(t, r, "Verdict:  interrupted")
			pluginGone(t, pidFile)
		})
	}
}

// noRaceExitSleep keeps the race detector's runtime from sleeping a second
// before the process exits (to let late reports out): that second is not
// podsync's.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"

// endsWithVerdict runs podsync with kubeconfig to its end, which must come
// within a second of its verdict.
func endsWithVerdict(t *testing.T, kubeconfig string, args []string) harness.Result {
	t.Helper()
	s := env.StartEnv(t, []string{"KUBECONFIG=" + kubeconfig, noRaceExitSleep}, args...)
	r := s.Wait(time.Minute)
	endedSoon(t, s)
	return r
}

// endedSoon fails the test unless the process ended, its stdout and
// stderr closed, within a second of the Verdict line it printed: a CI
// step waits for both, and nothing (a credential plugin started as the
// run ended) may hold them after the verdict.
func endedSoon(t *testing.T, s *harness.Stream) {
	t.Helper()
	after := s.EndedAfterStderr(`(?m)^Verdict: `)
	t.Logf("ended %s after the Verdict line", after.Round(time.Millisecond))
	if after > time.Second {
		t.Errorf("ended %s after the Verdict line, want within a second", after.Round(time.Millisecond))
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
