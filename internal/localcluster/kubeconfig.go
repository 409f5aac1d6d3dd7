//go:build unix

package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	clusterName = "podsync"
	// AdminContext is the admin kubeconfig's current context (group system:masters).
	AdminContext = "podsync-admin"
	// RestrictedContext authenticates as RestrictedUser, which no RBAC rule
	// grants anything (every request but discovery and whoami is
	// Forbidden), for "forbidden" cases.
	RestrictedContext = "podsync-restricted"
	// RestrictedUser is the user name of RestrictedContext.
	RestrictedUser = "podsync-restricted"
	// NoPodLogsContext authenticates as the user of the same name in
	// NoPodLogsGroup: it may watch pods and events but not read logs.
	NoPodLogsContext = "podsync-no-pod-logs"
	// NoEventsContext authenticates as the user of the same name in
	// NoEventsGroup: it may watch pods and read logs but not list events.
	NoEventsContext = "podsync-no-events"
)

// kubeUser is one user entry of a kubeconfig, with the context that uses it.
type kubeUser struct {
	context string
	name    string
	creds   keyPair
}

// writeKubeconfig writes a self-contained kubeconfig (certificates inlined)
// whose current context is the first user's.
func writeKubeconfig(path, server string, caPEM []byte, users ...kubeUser) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	for _, u := range users {
		cfg.AuthInfos[u.name] = &clientcmdapi.AuthInfo{
			ClientCertificateData: u.creds.cert,
			ClientKeyData:         u.creds.key,
		}
		cfg.Contexts[u.context] = &clientcmdapi.Context{
			Cluster:   clusterName,
			AuthInfo:  u.name,
			Namespace: "default",
		}
	}
	if len(users) > 0 {
		cfg.CurrentContext = users[0].context
	}
	return saveKubeconfig(cfg, path)
}

// saveKubeconfig writes cfg readable only by its owner, as it holds keys.
func saveKubeconfig(cfg *clientcmdapi.Config, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create folder for kubeconfig: %w", err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	// clientcmd keeps the file mode of an existing file; keys need 0600.
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("restrict kubeconfig %s: %w", path, err)
	}
	return nil
}
