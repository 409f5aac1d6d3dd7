//go:build unix

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// kwokCRDs are the kwok kinds the cluster enables: which log files kwok
// serves for which pod. Each is installed from the kwok module's
// kustomize/crd/bases before kwok starts, which refuses to run without them.
var kwokCRDs = map[string]string{
	"Logs":        "kwok.x-k8s.io_logs.yaml",
	"ClusterLogs": "kwok.x-k8s.io_clusterlogs.yaml",
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func (c *Cluster) dynamicClient() (dynamic.Interface, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return dyn, nil
}

// installKwokCRDs creates kwok's CRDs and waits until they are Established.
func (c *Cluster) installKwokCRDs(ctx context.Context, moduleDir string) error {
	dyn, err := c.dynamicClient()
	if err != nil {
		return err
	}
	crds := dyn.Resource(crdResource)
	var names []string
	for _, file := range kwokCRDs {
		data, err := os.ReadFile(filepath.Join(moduleDir, "kustomize", "crd", "bases", file))
		if err != nil {
			return fmt.Errorf("read kwok CRD: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return fmt.Errorf("parse kwok CRD %s: %w", file, err)
		}
		if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	return c.poll(ctx, "kwok CRDs to be Established", c.all(), c.named(APIServer), func(ctx context.Context) error {
		for _, name := range names {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !hasCondition(crd, "Established") {
				return fmt.Errorf("CRD %s is not Established", name)
			}
		}
		return nil
	})
}

func hasCondition(obj *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Groups bound at start to cluster roles of the same name, for tests of
// partial rights. A user made with WriteUserKubeconfig(path, user, group)
// gets them; the admin kubeconfig has a context for each.
const (
	// NoPodLogsGroup may get, list and watch pods, events and the
	// workloads podsync resolves (deployments, replica sets, stateful
	// sets, daemon sets, jobs), but not get pods/log.
	NoPodLogsGroup = "podsync:no-pod-logs"
	// NoEventsGroup may read pods, pods/log and the same workloads, but
	// no events (neither core nor events.k8s.io).
	NoEventsGroup = "podsync:no-events"
)

func readRule(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch"}}
}

// testRoles are the cluster roles of NoPodLogsGroup and NoEventsGroup.
func testRoles() map[string][]rbacv1.PolicyRule {
	workloads := []rbacv1.PolicyRule{
		readRule("", "pods"),
		readRule("apps", "deployments", "replicasets", "statefulsets", "daemonsets"),
		readRule("batch", "jobs"),
	}
	return map[string][]rbacv1.PolicyRule{
		NoPodLogsGroup: append([]rbacv1.PolicyRule{readRule("", "events"), readRule("events.k8s.io", "events")}, workloads...),
		NoEventsGroup: append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}}},
			workloads...),
	}
}

// createTestRoles binds each group of testRoles to its cluster role.
func (c *Cluster) createTestRoles(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	for name, rules := range testRoles() {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create cluster role %s: %w", name, err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create cluster role binding %s: %w", name, err)
		}
	}
	return nil
}
