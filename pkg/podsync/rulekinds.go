package podsync

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/health"
)

// A health rule whose group and kind the cluster does not serve judges
// nothing: with a typo in its kind or group, the objects it was written
// for fall back to kstatus's conventions without a word. So each such
// rule is named once at start, before any watch, with what the cluster
// serves that comes close.

// servedKinds maps each group the cluster serves to its kinds.
type servedKinds map[string][]string

// discoverServed asks discovery for every group and kind; groups that
// fail to answer are left out (their rules are not named).
func discoverServed(d discovery.DiscoveryInterface) (servedKinds, error) {
	_, lists, err := discovery.ServerGroupsAndResources(d)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	out := servedKinds{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && !slices.Contains(out[gv.Group], r.Kind) {
				out[gv.Group] = append(out[gv.Group], r.Kind)
			}
		}
	}
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		// A group that failed is not known to lack the kind.
		for gv := range failed.Groups {
			out[gv.Group] = append(out[gv.Group], "*")
		}
	}
	return out, nil
}

// unmatched says why a rule for gk matches nothing the cluster serves;
// "" when it matches.
func (s servedKinds) unmatched(gk schema.GroupKind) string {
	kinds, groupServed := s[gk.Group]
	if slices.Contains(kinds, gk.Kind) || slices.Contains(kinds, "*") {
		return ""
	}
	var near []string
	for group, ks := range s {
		for _, k := range ks {
			if strings.EqualFold(k, gk.Kind) {
				near = append(near, schema.GroupKind{Group: group, Kind: k}.String())
			}
		}
	}
	slices.Sort(near)
	why := fmt.Sprintf("the cluster serves no group %q", gk.Group)
	if groupServed {
		why = fmt.Sprintf("group %q has no kind %s", gk.Group, gk.Kind)
	}
	if len(near) > 0 {
		why += " (it serves " + strings.Join(near, ", ") + ")"
	}
	return why
}

// sayUnmatchedRules names on w, once, each health rule whose kind the
// cluster does not serve. A discovery that fails says nothing: the run
// meets the failure again where it matters.
func sayUnmatchedRules(w io.Writer, prefix string, rules *health.Rules, d discovery.DiscoveryInterface) {
	if rules.Len() == 0 {
		return
	}
	served, err := discoverServed(d)
	if err != nil {
		klog.V(2).Infof("podsync: %scould not check the health rules' kinds: %v", prefix, err)
		return
	}
	for _, gk := range rules.Kinds() {
		if why := served.unmatched(gk); why != "" {
			fmt.Fprintf(w, "podsync: %s%s matches no kind the cluster serves: %s; it judges nothing until the cluster serves that kind\n",
				prefix, rules.Label(gk), why)
		}
	}
}
