package cmd

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// noCluster refuses a run that has nowhere to connect: no kubeconfig
// holds a cluster, no --server was given, and podsync does not run in a
// pod. client-go would fall back to http://localhost:8080, and the user
// would get a connection error about a server they never named.
func noCluster(cf *genericclioptions.ConfigFlags) error {
	if cf.APIServer != nil && *cf.APIServer != "" {
		return nil
	}
	raw, err := cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil || len(raw.Clusters) > 0 {
		return nil // a loading error is reported where the config is read
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return nil
	}
	where := "~/.kube/config"
	switch {
	case cf.KubeConfig != nil && *cf.KubeConfig != "":
		where = *cf.KubeConfig
	case os.Getenv("KUBECONFIG") != "":
		where = "KUBECONFIG=" + os.Getenv("KUBECONFIG")
	}
	return usageError("kubeconfig: no cluster configured: no kubeconfig with a cluster at %s (give --kubeconfig, KUBECONFIG or --server)", where)
}
