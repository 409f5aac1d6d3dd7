package podsync

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
)

// sortByField orders the SYNC messages of an initial list as `kubectl get
// --sort-by FIELD` orders its list: from the list's own order (by
// namespace and name), by kubectl's sorter on the pods as unstructured
// objects. field was checked before any cluster call (ValidSortBy).
func sortByField(msgs []message.Message, field string) error {
	if len(msgs) < 2 {
		return nil
	}
	slices.SortFunc(msgs, func(a, b message.Message) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	objs := make([]runtime.Object, len(msgs))
	for i, m := range msgs {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m.Row.Pod())
		if err != nil {
			return fmt.Errorf("--sort-by: convert pod %s: %w", m.Key, err)
		}
		objs[i] = &unstructured.Unstructured{Object: content}
	}
	path, err := get.RelaxedJSONPathExpression(field)
	if err != nil {
		return fmt.Errorf("--sort-by %s: %w", field, err)
	}
	// kubectl's sorter exits the process on a value it cannot order; such
	// values are refused here first.
	if err := sortable(objs, path); err != nil {
		return fmt.Errorf("--sort-by %s: %w", field, err)
	}
	sorter, err := get.SortObjects(nil, objs, path)
	if err != nil {
		return fmt.Errorf("--sort-by %s: %w", field, err)
	}
	sorted := make([]message.Message, len(msgs))
	for i := range msgs {
		sorted[i] = msgs[sorter.OriginalPosition(i)]
	}
	copy(msgs, sorted)
	return nil
}

// ValidSortBy checks a --sort-by value before any cluster call, as kubectl
// get parses it.
func ValidSortBy(field string) error {
	path, err := get.RelaxedJSONPathExpression(field)
	if err != nil {
		return fmt.Errorf("invalid --sort-by %q: %w", field, err)
	}
	if err := jsonpath.New("sort").Parse(path); err != nil {
		return fmt.Errorf("invalid --sort-by %q: %w", field, err)
	}
	return nil
}

// sortable refuses values kubectl's sorter cannot compare: it orders
// strings and numbers, and exits the process on anything else.
func sortable(objs []runtime.Object, path string) error {
	parser := jsonpath.New("sort").AllowMissingKeys(true)
	if err := parser.Parse(path); err != nil {
		return err
	}
	for _, obj := range objs {
		results, err := parser.FindResults(obj.(*unstructured.Unstructured).Object)
		if err != nil {
			return err
		}
		if len(results) == 0 || len(results[0]) == 0 {
			continue
		}
		if kind, ok := scalar(results[0][0]); !ok {
			return fmt.Errorf("cannot sort by a %s: the field must be a string or a number", kind)
		}
	}
	return nil
}

func scalar(v reflect.Value) (reflect.Kind, bool) {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Interface:
		return v.Kind(), true
	}
	return v.Kind(), false
}
