//go:build unix

package localcluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// kwokNodeAnnotation marks the nodes kwok manages; kwok ignores any other.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// plan is a prepared cluster: files written, processes not started yet.
type plan struct {
	comps map[string]*component
	// kwokModule is the source folder of the kwok version in BinDir, for
	// its stages and CRDs.
	kwokModule string
}

// prepare resets Dir, picks ports and writes certificates, kubeconfigs and
// configuration files, and describes each component's command line.
func (c *Cluster) prepare(o Options) (*plan, error) {
	if err := resetDir(o.Dir); err != nil {
		return nil, err
	}
	pt, err := pickPorts()
	if err != nil {
		return nil, err
	}
	c.Server = loopback("https", pt.apiServer, "")
	if err := c.writePKI(); err != nil {
		return nil, err
	}
	modDir, err := kwokModuleDir(filepath.Join(o.BinDir, Kwok))
	if err != nil {
		return nil, fmt.Errorf("kwok: %w", err)
	}
	if err := c.writeConfigs(o, modDir); err != nil {
		return nil, err
	}
	comps := []*component{
		c.etcd(o, pt),
		c.apiServer(o, pt),
		c.controllerManager(o, pt),
		c.scheduler(o, pt),
		c.kwok(o, pt),
	}
	p := &plan{comps: map[string]*component{}, kwokModule: modDir}
	for _, comp := range comps {
		comp.Binary = filepath.Join(o.BinDir, comp.Name)
	}
	if len(o.CrashLogsCommand) > 0 && o.Detach && !o.NoCrashLogs {
		comps = append(comps, &component{
			Name:   CrashLogs,
			Binary: o.CrashLogsCommand[0],
			Args:   append(slices.Clone(o.CrashLogsCommand[1:]), o.Dir),
		})
	}
	for _, comp := range comps {
		comp.Log = filepath.Join(o.Dir, "logs", comp.Name+".log")
		p.comps[comp.Name] = comp
	}
	return p, nil
}

// writePKI writes the CA, one loopback serving certificate shared by every
// server, the service-account key pair and a kubeconfig per client.
func (c *Cluster) writePKI() error {
	ca, err := newAuthority("podsync-local-ca")
	if err != nil {
		return err
	}
	if err := ca.save(c.pkiPath("ca.crt"), c.pkiPath("ca.key")); err != nil {
		return err
	}
	proxyCA, err := newAuthority("podsync-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.pkiPath("front-proxy-ca.crt"), proxyCA.certPEM, 0o644); err != nil {
		return fmt.Errorf("write front-proxy CA: %w", err)
	}
	serving, err := ca.servingCert("podsync-local-serving")
	if err != nil {
		return err
	}
	if err := writeKeyPair(serving, c.pkiPath("serving.crt"), c.pkiPath("serving.key")); err != nil {
		return err
	}
	// kwok's kubelet endpoint has its own certificate, as a kubelet does;
	// the API server checks it against the cluster CA when it fetches logs
	// (the nodes' address is 127.0.0.1, which the certificate names).
	kubelet, err := ca.servingCert("podsync-kwok-kubelet")
	if err != nil {
		return err
	}
	if err := writeKeyPair(kubelet, c.pkiPath("kwok.crt"), c.pkiPath("kwok.key")); err != nil {
		return err
	}
	sa, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	if err := writeKeyPair(sa, c.pkiPath("sa.pub"), c.pkiPath("sa.key")); err != nil {
		return err
	}
	return c.writeClientKubeconfigs(ca)
}

func (c *Cluster) writeClientKubeconfigs(ca *authority) error {
	admin, err := ca.clientCert("podsync-admin", "system:masters")
	if err != nil {
		return err
	}
	// Kept as files too, for kubeconfigs of extra API servers.
	if err := writeKeyPair(admin, c.pkiPath("admin.crt"), c.pkiPath("admin.key")); err != nil {
		return err
	}
	users := []kubeUser{{context: AdminContext, name: "podsync-admin", creds: admin}}
	for _, u := range []struct{ name, group string }{
		{RestrictedUser, ""},
		{NoPodLogsContext, NoPodLogsGroup},
		{NoEventsContext, NoEventsGroup},
	} {
		var groups []string
		if u.group != "" {
			groups = append(groups, u.group)
		}
		creds, err := ca.clientCert(u.name, groups...)
		if err != nil {
			return err
		}
		users = append(users, kubeUser{context: u.name, name: u.name, creds: creds})
	}
	if err := writeKubeconfig(c.Kubeconfig, c.Server, ca.certPEM, users...); err != nil {
		return err
	}
	// The users the bootstrap RBAC policy grants the components' rights to;
	// kwok acts as kubelet for every node and gets system:masters.
	clients := map[string][]string{
		ControllerManager: {"system:kube-controller-manager"},
		Scheduler:         {"system:kube-scheduler"},
		Kwok:              {"kwok-controller", "system:masters"},
	}
	for name, id := range clients {
		creds, err := ca.clientCert(id[0], id[1:]...)
		if err != nil {
			return err
		}
		path := c.pkiPath(name + ".kubeconfig")
		if err := writeKubeconfig(path, c.Server, ca.certPEM, kubeUser{context: name, name: id[0], creds: creds}); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) configPath(name string) string { return filepath.Join(c.Dir, "config", name) }

func (c *Cluster) writeConfigs(o Options, modDir string) error {
	// The scheduler's API rate limits only exist in its config file; the
	// defaults (50 qps) would take minutes to bind 50,000 pods.
	sched := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`, c.pkiPath(Scheduler+".kubeconfig"))
	if err := os.WriteFile(c.configPath("kube-scheduler.yaml"), []byte(sched), 0o644); err != nil {
		return fmt.Errorf("write scheduler config: %w", err)
	}
	// kwok applies its defaults only when it has no configuration at all,
	// so every option it needs is spelled out here.
	opts := map[string]any{
		"cidr":                            "10.255.0.0/16", // only for pods of nodes without podCIDR
		"podPlayStageParallelism":         16,
		"nodePlayStageParallelism":        4,
		"nodeLeaseParallelism":            4,
		"podsOnNodeSyncParallelism":       4,
		"enablePodsOnNodeSyncListPager":   true,
		"enablePodsOnNodeSyncStreamWatch": false,
		"manageAllNodes":                  false,
		// The debugging handlers include the kubelet's containerLogs
		// endpoint; without them the API server gets 405 for pods/log.
		"enableDebuggingHandlers":   true,
		"enableProfilingHandler":    false,
		"enableContentionProfiling": false,
	}
	return writeKwokConfig(c.configPath("kwok.yaml"), modDir, o.PodStages, opts)
}

func (c *Cluster) etcd(o Options, pt ports) *component {
	client := loopback("http", pt.etcdClient, "")
	peer := loopback("http", pt.etcdPeer, "")
	return &component{
		Name: Etcd,
		Args: []string{
			"--name=podsync",
			"--data-dir=" + filepath.Join(o.Dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=podsync=" + peer,
			"--initial-cluster-state=new",
			// Throwaway data: skipping fsync makes large pod counts fast.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=" + strconv.Itoa(8<<30),
		},
		Health: loopback("http", pt.etcdClient, "/health"),
	}
}

func (c *Cluster) apiServer(o Options, pt ports) *component {
	args := []string{
		"--advertise-address=127.0.0.1",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(pt.apiServer),
		"--etcd-servers=" + loopback("http", pt.etcdClient, ""),
		"--client-ca-file=" + c.pkiPath("ca.crt"),
		// The front-proxy CA only exists so that the components' delegated
		// authentication finds a complete configuration; nothing uses it.
		"--requestheader-client-ca-file=" + c.pkiPath("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--tls-cert-file=" + c.pkiPath("serving.crt"),
		"--tls-private-key-file=" + c.pkiPath("serving.key"),
		"--cert-dir=" + filepath.Join(o.Dir, "pki"),
		"--authorization-mode=Node,RBAC",
		"--service-account-key-file=" + c.pkiPath("sa.pub"),
		"--service-account-signing-key-file=" + c.pkiPath("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + serviceCIDR,
		// On loopback the default reconciler would publish 127.0.0.1 as the
		// kubernetes Service's endpoint, which the API server refuses.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		// Logs come from kwok's kubelet endpoint on the nodes' InternalIP
		// (127.0.0.1), verified like a real kubelet's serving certificate.
		// Without the address type the API server would try the nodes'
		// Hostname first, which does not resolve.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + c.pkiPath("ca.crt"),
	}
	return &component{
		Name:   APIServer,
		Args:   append(args, o.APIServerArgs...),
		Health: loopback("https", pt.apiServer, "/readyz"),
	}
}

func (c *Cluster) controllerManager(o Options, pt ports) *component {
	kc := c.pkiPath(ControllerManager + ".kubeconfig")
	return &component{
		Name: ControllerManager,
		Args: []string{
			"--kubeconfig=" + kc,
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(pt.controllerManager),
			"--tls-cert-file=" + c.pkiPath("serving.crt"),
			"--tls-private-key-file=" + c.pkiPath("serving.key"),
			"--leader-elect=false",
			// All controllers, node lifecycle included: it lifts the
			// not-ready taint new nodes get, and it would evict pods only
			// after a node misses kwok's lease renewals for minutes.
			"--controllers=*",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + c.pkiPath("sa.key"),
			"--root-ca-file=" + c.pkiPath("ca.crt"),
			"--cluster-signing-cert-file=" + c.pkiPath("ca.crt"),
			"--cluster-signing-key-file=" + c.pkiPath("ca.key"),
			"--kube-api-qps=1000",
			"--kube-api-burst=2000",
			"--profiling=false",
		},
		Health: loopback("https", pt.controllerManager, "/healthz"),
	}
}

func (c *Cluster) scheduler(o Options, pt ports) *component {
	kc := c.pkiPath(Scheduler + ".kubeconfig")
	return &component{
		Name: Scheduler,
		Args: []string{
			"--config=" + c.configPath("kube-scheduler.yaml"),
			"--authentication-kubeconfig=" + kc,
			"--authorization-kubeconfig=" + kc,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(pt.scheduler),
			"--tls-cert-file=" + c.pkiPath("serving.crt"),
			"--tls-private-key-file=" + c.pkiPath("serving.key"),
		},
		Health: loopback("https", pt.scheduler, "/healthz"),
	}
}

func (c *Cluster) kwok(o Options, pt ports) *component {
	return &component{
		Name: Kwok,
		Args: []string{
			"--kubeconfig=" + c.pkiPath(Kwok+".kubeconfig"),
			"--config=" + c.configPath("kwok.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--server-address=" + hostPort(pt.kwok),
			// The kubelet endpoint the API server calls for container logs;
			// kwok's node-initialize stage writes the address and port into
			// each node's status. The same port serves HTTP (health) and
			// HTTPS.
			"--node-ip=127.0.0.1",
			"--node-port=" + strconv.Itoa(pt.kwok),
			"--tls-cert-file=" + c.pkiPath("kwok.crt"),
			"--tls-private-key-file=" + c.pkiPath("kwok.key"),
			"--enable-crds=" + strings.Join(slices.Sorted(maps.Keys(kwokCRDs)), ","),
			"--node-lease-duration-seconds=40",
			// Its INFO level logs every lease renewal; errors stay visible.
			"-v=WARN",
		},
		// kwok also reads $KWOK_WORKDIR/kwok.yaml; point it at our folder so
		// a user's ~/.kwok/kwok.yaml cannot change the cluster.
		Env:    []string{"KWOK_WORKDIR=" + c.configPath("kwok-home")},
		Health: loopback("http", pt.kwok, "/healthz"),
	}
}
