package podsync

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
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
type firstAnswer struct {
	once  sync.Once
	heard chan struct{}
}

func newFirstAnswer() *firstAnswer { return &firstAnswer{heard: make(chan struct{})} }

// mark records an answer (a response, or a request's result).
func (a *firstAnswer) mark() { a.once.Do(func() { close(a.heard) }) }

// traced is ctx whose HTTP requests mark the answer when the first byte of
// a response arrives.
func (a *firstAnswer) traced(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: a.mark})
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
