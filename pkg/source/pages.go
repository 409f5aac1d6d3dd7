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

// PageSize is how many pods a paged list asks for after the first page,
// and how many of a streaming list are observed at a time (see
// initial.go).
const PageSize = 5000

// pager fetches one page of rows.
type pager func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error)

// listReported lists page by page and reports the outcome.
func listReported(ctx context.Context, opts metav1.ListOptions, page pager, paged bool, r Reporter) (*PodRowList, error) {
	list, err := listPages(ctx, opts, page, paged)
	orNop(r).Result("list", err)
	return list, err
}

// listPages answers the reflector's list. A list of the newest state, or
// of any state ("0"), is read from one snapshot: a first page, small so
// that its rows print at once, then the whole list at that page's
// resourceVersion, of which the pods after the first page are observed as
// the second page. The API server serves a list at an exact
// resourceVersion from its cache, whole, as cheaply as a list of the
// newest state; the pages a continue token asks for it reads from etcd,
// which at 150,000 pods cost it several times the CPU
// (docs/BENCHMARKS.md). The client reads a list as it arrives (see
// proto.go), so one big answer costs it no more memory than pages did.
// When paged (--request-timeout bounds each request, and the rest in one
// request could outlast the bound), the rest is read in pages of PageSize
// by continue token instead, each observed as it arrives. A list at a
// given resourceVersion, or a page the caller asked for, is passed
// through as asked. (client-go's ListPager would hand back untyped items
// to be sorted into rows again; the pages here are rows already.) The
// next request is made as soon as a page has arrived, before that page is
// observed: the server prepares it while the client prints.
func listPages(ctx context.Context, opts metav1.ListOptions, page pager, paged bool) (*PodRowList, error) {
	if opts.Continue != "" || (opts.ResourceVersion != "" && opts.ResourceVersion != "0") {
		return page(ctx, opts)
	}
	first := opts
	first.ResourceVersion, first.ResourceVersionMatch, first.Limit = "", "", FirstPageSize
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a request made ahead is not waited for if the list fails
	next := fetch(ctx, page, first)
	var out *PodRowList
	for {
		r := <-next
		p, err := r.list, r.err
		if out != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
			// The snapshot was compacted away after the first page: list
			// whole, as asked, as client-go's pager does.
			opts.Limit = 0
			whole, err := page(ctx, opts)
			if err == nil {
				ObservePage(ctx, whole)
			}
			return whole, err
		}
		if err != nil {
			return nil, err
		}
		shown := p
		switch {
		case out == nil && p.Continue != "" && !paged:
			rest := opts
			rest.ResourceVersion, rest.ResourceVersionMatch, rest.Limit = p.ResourceVersion, metav1.ResourceVersionMatchExact, 0
			next = fetch(ctx, page, rest)
		case p.Continue != "":
			more := opts
			more.ResourceVersion, more.ResourceVersionMatch, more.Continue, more.Limit = "", "", p.Continue, PageSize
			next = fetch(ctx, page, more)
		}
		switch {
		case out == nil:
			out = p
			if n := p.RemainingItemCount; n != nil && *n > 0 {
				out.Items = append(make([]PodRow, 0, len(p.Items)+int(*n)), p.Items...)
			}
			if !paged && p.Continue != "" {
				// Not a continue token of the server: it says that more
				// pages follow.
				shown = &PodRowList{ListMeta: metav1.ListMeta{ResourceVersion: p.ResourceVersion, Continue: "more"}, Items: p.Items}
			}
		case !paged:
			shown = &PodRowList{ListMeta: p.ListMeta, Items: after(out.Items, p.Items)}
			out = p
		default:
			out.Items = append(out.Items, p.Items...)
		}
		ObservePage(ctx, shown)
		if p.Continue == "" {
			out.Continue, out.RemainingItemCount = "", nil
			return out, nil
		}
	}
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
