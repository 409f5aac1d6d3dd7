package podsync

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultAnswerLimit bounds the wait for a cluster's first answer (its
// discovery, its first list) when --request-timeout is unset: a credential
// plugin that never answers makes the cluster unusable rather than the
// run hang.
const DefaultAnswerLimit = 30 * time.Second

// answerGrace is how much longer than the limit the first answer is
// waited for.
const answerGrace = 500 * time.Millisecond

// answerLimit is how long a cluster may take to answer its first request:
// --request-timeout, or DefaultAnswerLimit.
func answerLimit(cfg Config) time.Duration {
	if cfg.RequestTimeout > 0 {
		return cfg.RequestTimeout
	}
	return DefaultAnswerLimit
}

// firstAnswer is whether a cluster has answered any request yet. A
// credential exec plugin runs inside a request, before it reaches the
// server, and does not heed the request's context or its timeout: a
// plugin that hangs holds the cluster's first list for ever, and with it
// the run. Until the first answer, the cluster is given up after the
// answer limit, as a cluster that cannot be used at start.
//
// After it, until the initial list is in, the answer limit bounds each
// silence: a server or a proxy that answered and then sends nothing more
// (the list's headers, then no body) gives the cluster up too, where it
// would hold a run for ever.
type firstAnswer struct {
	once  sync.Once
	heard chan struct{}
	// last is when a byte last arrived, in Unix nanoseconds.
	last atomic.Int64
}

func newFirstAnswer() *firstAnswer { return &firstAnswer{heard: make(chan struct{})} }

// mark records an answer (a response, or a request's result), and that
// the cluster is not silent.
func (a *firstAnswer) mark() {
	a.last.Store(time.Now().UnixNano())
	a.once.Do(func() { close(a.heard) })
}

// traced is ctx whose HTTP requests mark the answer when the first byte of
// a response arrives, and as each piece of its body is read.
func (a *firstAnswer) traced(ctx context.Context) context.Context {
	ctx = withProgress(ctx, a.mark)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: a.mark})
}

// silenceCheck is how often awaitList looks at the silence.
const silenceCheck = 250 * time.Millisecond

// awaitList gives up on the cluster with giveUp if nothing arrives for
// limit before its initial list is in (listed, or done closed), unless
// ctx ends first. It starts after the first answer, which await bounds.
func (a *firstAnswer) awaitList(ctx context.Context, limit time.Duration, server string, named bool, listed func() bool, done <-chan struct{}, giveUp func(error)) {
	select {
	case <-a.heard:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(silenceCheck)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if listed() {
			return
		}
		if silent := time.Since(time.Unix(0, a.last.Load())); silent > limit+answerGrace {
			flag := ""
			if named {
				flag = " (--request-timeout)"
			}
			giveUp(fmt.Errorf("the initial list never completed: nothing arrived for %s%s from the API server at %s", limit, flag, server))
			return
		}
	}
}

// await gives up on the cluster with giveUp if it has not answered within
// limit, unless ctx ends first.
func (a *firstAnswer) await(ctx context.Context, limit time.Duration, server string, named bool, giveUp func(error)) {
	// The wait starts before the first request: the grace lets a request
	// that times out by itself report its own error first.
	t := time.NewTimer(limit + answerGrace)
	defer t.Stop()
	select {
	case <-a.heard:
	case <-ctx.Done():
	case <-t.C:
		flag := ""
		if named {
			flag = " (--request-timeout)"
		}
		giveUp(fmt.Errorf("no answer within %s%s from the API server at %s or its credential plugin", limit, flag, server))
	}
}
