package source

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirstPageSize is the first page's size: small, so that the first rows
// print at once whatever the size of the cluster. The rest of the list is
// then asked for in one request at the first page's resourceVersion (see
// listPages).
const FirstPageSize = 500

// PageSize is how many pods of a streaming list are observed at a time
// after the first page (see initial.go).
const PageSize = 5000

// pager fetches one page of rows.
type pager func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error)

// listReported lists page by page and reports the outcome.
func listReported(ctx context.Context, opts metav1.ListOptions, page pager, r Reporter) (*PodRowList, error) {
	list, err := listPages(ctx, opts, page)
	orNop(r).Result("list", err)
	return list, err
}

// listPages answers the reflector's list. A list of the newest state, or
// of any state ("0"), is read in two requests of one snapshot: a first
// page, small so that its rows print at once, then the whole list at that
// page's resourceVersion, of which the pods after the first page are
// observed as the second page. The API server serves a list at an exact
// resourceVersion from its cache, whole, as cheaply as a list of the
// newest state; the pages a continue token asks for it reads from etcd,
// which at 150,000 pods cost it three to seven times the CPU
// (docs/BENCHMARKS.md). The client reads a list as it arrives (see
// proto.go), so one big answer costs it no more memory than pages did. A
// list at a given resourceVersion, or a page the caller asked for, is
// passed through as asked. (client-go's ListPager would hand back untyped
// items to be sorted into rows again; the pages here are rows already.)
// The rest is asked for as soon as the first page has arrived, before
// that page is observed: the server prepares it while the client prints.
func listPages(ctx context.Context, opts metav1.ListOptions, page pager) (*PodRowList, error) {
	if opts.Continue != "" || (opts.ResourceVersion != "" && opts.ResourceVersion != "0") {
		return page(ctx, opts)
	}
	first := opts
	first.ResourceVersion, first.ResourceVersionMatch, first.Limit = "", "", FirstPageSize
	p, err := page(ctx, first)
	if err != nil || p.Continue == "" {
		if err == nil {
			ObservePage(ctx, p)
		}
		return p, err
	}
	rest := opts
	rest.ResourceVersion, rest.ResourceVersionMatch, rest.Limit = p.ResourceVersion, metav1.ResourceVersionMatchExact, 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the rest, fetched ahead, is not waited for if the list fails
	next := fetch(ctx, page, rest)
	// Not a continue token of the server: it says that more pages follow.
	shown := &PodRowList{ListMeta: metav1.ListMeta{ResourceVersion: p.ResourceVersion, Continue: "more"}, Items: p.Items}
	ObservePage(ctx, shown)
	r := <-next
	whole, err := r.list, r.err
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		// The snapshot was compacted away after the first page: list
		// whole, as asked, as client-go's pager does.
		opts.Limit = 0
		whole, err = page(ctx, opts)
		if err == nil {
			ObservePage(ctx, whole)
		}
		return whole, err
	}
	if err != nil {
		return nil, err
	}
	ObservePage(ctx, &PodRowList{ListMeta: whole.ListMeta, Items: after(p.Items, whole.Items)})
	return whole, nil
}

// after is the rows of whole that follow the first page's: the pods of
// one snapshot come in the same order, so it is what follows as many rows
// when those name the same pods, and whole otherwise (the stream leaves
// out a row it has shown unchanged).
func after(first, whole []PodRow) []PodRow {
	if len(whole) < len(first) {
		return whole
	}
	for i := range first {
		a, b := first[i].Meta(), whole[i].Meta()
		if a.UID != b.UID || a.ResourceVersion != b.ResourceVersion {
			return whole
		}
	}
	return whole[len(first):]
}

type fetched struct {
	list *PodRowList
	err  error
}

// fetch asks for one page in the background.
func fetch(ctx context.Context, page pager, opts metav1.ListOptions) <-chan fetched {
	out := make(chan fetched, 1)
	go func() {
		list, err := page(ctx, opts)
		out <- fetched{list, err}
	}()
	return out
}

type pageObserverKey struct{}

// ObservingPages returns a context whose whole lists hand each page to
// observe as soon as it has arrived, before the list is complete: a run
// prints its first rows while the rest are still on the way. Like
// httptrace's hooks, the observer travels with the request's context,
// so that decorators (ByName) can narrow what it sees.
func ObservingPages(ctx context.Context, observe func(*PodRowList)) context.Context {
	return context.WithValue(ctx, pageObserverKey{}, observe)
}

// ObservePage hands a page of a whole list to the observer of ctx, if any;
// sources call it for every page they read.
func ObservePage(ctx context.Context, page *PodRowList) {
	if observe, ok := ctx.Value(pageObserverKey{}).(func(*PodRowList)); ok && len(page.Items) > 0 {
		observe(page)
	}
}
