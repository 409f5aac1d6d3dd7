package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The credential flags of genericclioptions and an exec credential plugin
// reach the API server as kubectl's do: no kubeconfig but --server,
// --certificate-authority and --token; a kubeconfig whose user runs an exec
// plugin; and --as, whose identity the server then judges.
func TestCredentials(t *testing.T) {
	ns := env.Namespace(t)
	runningPod(t, ns, "cred", nil)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	writeDecoded(t, caFile, env.Kubectl(t, "config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"))

	t.Run("server, CA and token flags without a kubeconfig", func(t *testing.T) {
		env.Kubectl(t, "-n", ns, "create", "serviceaccount", "viewer")
		env.Kubectl(t, "-n", ns, "create", "rolebinding", "viewer", "--clusterrole=view", "--serviceaccount="+ns+":viewer")
		token := strings.TrimSpace(env.Kubectl(t, "-n", ns, "create", "token", "viewer"))
		noConfig := []string{"KUBECONFIG=" + filepath.Join(dir, "does-not-exist")}
		r := env.PodsyncEnv(t, runLimit, noConfig, "--server", env.Cluster.Server, "--certificate-authority", caFile,
			"--token", token, "-n", ns, "--once")
		if got := names(t, table(t, r.Stdout)); r.Code != 0 || !reflect.DeepEqual(got, []string{"cred"}) {
			t.Errorf("with --server, --certificate-authority and --token: exit %d, listed %v; want 0 and [cred]\n%s", r.Code, got, r)
		}
		if strings.Contains(r.Stdout+r.Stderr, token) {
			t.Errorf("the token appears in the output\n%s", r)
		}
	})

	t.Run("exec credential plugin", func(t *testing.T) {
		cert := env.Kubectl(t, "config", "view", "--raw", "--minify", "-o", "jsonpath={.users[0].user.client-certificate-data}")
		key := env.Kubectl(t, "config", "view", "--raw", "--minify", "-o", "jsonpath={.users[0].user.client-key-data}")
		certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
		writeDecoded(t, certFile, cert)
		writeDecoded(t, keyFile, key)
		counter := filepath.Join(dir, "exec-ran")
		plugin := writeExecPlugin(t, dir, certFile, keyFile, counter)
		kubeconfig := writeFile(t, "exec-kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: exec-user, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}}]
contexts: [{name: exec, context: {cluster: local, user: exec-user, namespace: %q}}]
current-context: exec
`, env.Cluster.Server, caFile, plugin, ns))
		r := env.PodsyncEnv(t, runLimit, []string{"KUBECONFIG=" + kubeconfig}, "--once")
		if got := names(t, table(t, r.Stdout)); r.Code != 0 || !reflect.DeepEqual(got, []string{"cred"}) {
			t.Errorf("through an exec plugin: exit %d, listed %v; want 0 and [cred]\n%s", r.Code, got, r)
		}
		if _, err := os.Stat(counter); err != nil {
			t.Errorf("the exec plugin never ran: %v\n%s", err, r)
		}
	})

	t.Run("--as is judged by the server", func(t *testing.T) {
		r := env.Podsync(t, runLimit, "-n", ns, "--as", "nobody-at-all", "--once")
		want := `User "nobody-at-all" cannot list resource "pods"`
		if r.Code != 1 || !strings.Contains(r.Stderr, want) || r.Stdout != "" {
			t.Errorf("--as nobody-at-all: want exit 1, no stdout and stderr naming %q\n%s", want, r)
		}
		r = env.Podsync(t, runLimit, "-n", ns, "--as", "someone-else", "--as-group", "system:masters", "--once")
		if got := names(t, table(t, r.Stdout)); r.Code != 0 || !reflect.DeepEqual(got, []string{"cred"}) {
			t.Errorf("--as with --as-group system:masters: exit %d, listed %v; want 0 and [cred]\n%s", r.Code, got, r)
		}
	})
}

// writeDecoded writes the base64 text of a kubeconfig field as a file.
func writeDecoded(t *testing.T, path, b64 string) {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil || len(data) == 0 {
		t.Fatalf("decode %s from the kubeconfig: %v (%d bytes)", filepath.Base(path), err, len(data))
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeExecPlugin writes a credential plugin that hands client-go the
// admin's client certificate as an ExecCredential, and leaves a file
// behind so the test knows it ran.
func writeExecPlugin(t *testing.T, dir, certFile, keyFile, ran string) string {
	t.Helper()
	path := filepath.Join(dir, "exec-credential")
	script := fmt.Sprintf(`#!/bin/sh
set -e
touch %q
cert=$(sed 's/$/\\n/' %q | tr -d '\n')
key=$(sed 's/$/\\n/' %q | tr -d '\n')
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"%%s","clientKeyData":"%%s"}}\n' "$cert" "$key"
`, ran, certFile, keyFile)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
