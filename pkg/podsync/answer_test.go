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

// After the first answer, a silence longer than the limit before the
// initial list is in gives the cluster up; bytes that keep arriving, a
// list that is in, or the run's end do not.
func TestInitialListSilence(t *testing.T) {
	const limit = 50 * time.Millisecond
	run := func(a *firstAnswer, listed func() bool, done <-chan struct{}, marks time.Duration, within time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		if marks > 0 {
			go func() {
				for ctx.Err() == nil {
					a.mark()
					time.Sleep(marks)
				}
			}()
		}
		var got error
		a.awaitList(ctx, limit, "https://127.0.0.1:6443", false, listed, done, func(err error) { got = err })
		return got
	}
	no := func() bool { return false }
	a := newFirstAnswer()
	a.mark()
	err := run(a, no, nil, 0, 10*time.Second)
	want := "the initial list never completed: nothing arrived for 50ms from the API server at https://127.0.0.1:6443"
	if err == nil || err.Error() != want {
		t.Errorf("silent after the first answer: %v, want %q", err, want)
	}
	if err := run(newFirstAnswer(), no, nil, 10*time.Millisecond, time.Second); err != nil {
		t.Errorf("bytes kept arriving, still given up: %v", err)
	}
	a = newFirstAnswer()
	a.mark()
	if err := run(a, func() bool { return true }, nil, 0, time.Second); err != nil {
		t.Errorf("listed, still given up: %v", err)
	}
	a = newFirstAnswer()
	a.mark()
	done := make(chan struct{})
	close(done)
	if err := run(a, no, done, 0, time.Second); err != nil {
		t.Errorf("the list is done, still given up: %v", err)
	}
	if err := run(newFirstAnswer(), no, nil, 0, time.Second); err != nil {
		t.Errorf("no first answer (await's part), given up: %v", err)
	}
}
