package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Filter selects the pods a source lists and watches; the server applies it.
type Filter struct {
	Namespace     string // empty for all namespaces
	LabelSelector string
	FieldSelector string
}

// apply merges the filter into the reflector's options.
func (f Filter) apply(opts metav1.ListOptions) metav1.ListOptions {
	opts.LabelSelector = f.LabelSelector
	opts.FieldSelector = f.FieldSelector
	return opts
}

// Reporter hears about each request the source makes, so the caller can tell
// a failing start from a dropped connection.
type Reporter interface {
	// Result is called after every list and every watch request.
	Result(verb string, err error)
}

type nopReporter struct{}

func (nopReporter) Result(string, error) {}

func orNop(r Reporter) Reporter {
	if r == nil {
		return nopReporter{}
	}
	return r
}
