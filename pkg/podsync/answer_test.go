package podsync

import (
	"context"
	"testing"
	"time"
)

func TestFirstAnswer(t *testing.T) {
	awaited := func(a *firstAnswer, named bool) error {
		var got error
		a.await(context.Background(), 20*time.Millisecond, "https://127.0.0.1:6443", named, func(err error) { got = err })
		return got
	}
	if err := awaited(newFirstAnswer(), true); err == nil ||
		err.Error() != "no answer within 20ms (--request-timeout) from the API server at https://127.0.0.1:6443 or its credential plugin" {
		t.Errorf("unanswered: %v", err)
	}
	if err := awaited(newFirstAnswer(), false); err == nil ||
		err.Error() != "no answer within 20ms from the API server at https://127.0.0.1:6443 or its credential plugin" {
		t.Errorf("unanswered without --request-timeout: %v", err)
	}
	a := newFirstAnswer()
	a.mark()
	a.mark()
	if err := awaited(a, true); err != nil {
		t.Errorf("answered, still given up: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	newFirstAnswer().await(ctx, time.Hour, "", true, func(err error) { t.Errorf("given up after the run ended: %v", err) })
	if got := answerLimit(Config{}); got != DefaultAnswerLimit {
		t.Errorf("answer limit without --request-timeout: %s", got)
	}
	if got := answerLimit(Config{RequestTimeout: 2 * time.Second}); got != 2*time.Second {
		t.Errorf("answer limit with --request-timeout 2s: %s", got)
	}
}
