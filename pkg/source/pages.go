package source

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

// PageSize is how many pods one list request asks for, after the first
// page. The reflector's first list (resourceVersion "0") would be answered
// whole by the API server's cache: one response holding every pod. Asked
// in pages of one snapshot instead, only one page's bytes are in memory at
// a time, which at tens of thousands of pods is hundreds of MiB less at the
// peak. Each page costs the server a seek into its snapshot, which at
// 150,000 pods makes pages of 1,000 almost twice as slow as pages of
// 5,000.
const PageSize = 5000

// FirstPageSize is the first page's size: small, so that the first rows
// print at once whatever the size of the cluster.
const FirstPageSize = 500

// pager fetches one page of rows.
type pager func(ctx context.Context, opts metav1.ListOptions) (*PodRowList, error)

// listReported lists page by page and reports the outcome.
func listReported(ctx context.Context, opts metav1.ListOptions, call Call, page pager, r Reporter) (*PodRowList, error) {
	list, err := listPages(ctx, opts, call, page)
	orNop(r).Result("list", err)
	return list, err
}

// listPages answers the reflector's list. A list of the newest state, or
// of any state ("0"), is read page by page from one consistent snapshot
// and returned whole; a list at a given resourceVersion, or a page the
// caller asked for, is passed through as asked. (client-go's ListPager
// would hand back untyped items to be sorted into rows again; the pages
// here are rows already.) The next page is asked for as soon as a page
// has arrived, before call observes it: the server prepares one page
// while the client prints the last, instead of each waiting for the other.
func listPages(ctx context.Context, opts metav1.ListOptions, call Call, page pager) (*PodRowList, error) {
	if opts.Continue != "" || (opts.ResourceVersion != "" && opts.ResourceVersion != "0") {
		return page(ctx, opts)
	}
	paged := opts
	paged.ResourceVersion, paged.ResourceVersionMatch, paged.Limit = "", "", FirstPageSize
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a page fetched ahead is not waited for if the list fails
	next := fetch(ctx, page, paged)
	var out *PodRowList
	for {
		r := <-next
		p, err := r.list, r.err
		if apierrors.IsResourceExpired(err) && paged.Continue != "" {
			// The snapshot was compacted away between two pages: list
			// whole, as asked, as client-go's pager does.
			opts.Limit = 0
			whole, err := page(ctx, opts)
			if err == nil {
				call.ObservePage(whole)
			}
			return whole, err
		}
		if err != nil {
			return nil, err
		}
		if p.Continue != "" {
			paged.Continue, paged.Limit = p.Continue, PageSize
			next = fetch(ctx, page, paged)
		}
		call.ObservePage(p)
		if out == nil {
			out = p
			if n := p.RemainingItemCount; n != nil && *n > 0 {
				out.Items = append(make([]wire.PodRow, 0, len(p.Items)+int(*n)), p.Items...)
			}
		} else {
			out.Items = append(out.Items, p.Items...)
		}
		if p.Continue == "" {
			out.Continue, out.RemainingItemCount = "", nil
			return out, nil
		}
	}
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
