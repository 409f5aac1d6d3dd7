package podsync

import (
	"context"
	"io"
	"net/http"
)

// progressKey carries, in a request's context, what hears of each piece
// of its response's body as it is read (see withProgress).
type progressKey struct{}

// withProgress returns ctx whose HTTP requests, made through clients from
// NewClients, call heard for each piece of a response body read: a list
// that is still arriving, however slowly, is told from one that stalled.
func withProgress(ctx context.Context, heard func()) context.Context {
	return context.WithValue(ctx, progressKey{}, heard)
}

// progressTransport hands response bodies to the hook of their request's
// context, if any.
type progressTransport struct{ next http.RoundTripper }

func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if heard, ok := req.Context().Value(progressKey{}).(func()); ok && resp != nil && resp.Body != nil {
		resp.Body = &progressBody{ReadCloser: resp.Body, heard: heard}
	}
	return resp, err
}

// progressBody calls heard after each read that returns bytes.
type progressBody struct {
	io.ReadCloser
	heard func()
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.heard()
	}
	return n, err
}
