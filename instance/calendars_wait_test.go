package instance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitCalendarsReturnsWhenTheViewStops: the scheduler waits for the
// calendars view to catch up, but a view that stopped (its topic cannot
// be read: a missing ACL) must not keep every job from firing (adversary
// 14c, read from the code): awaitReady returns once the view stopped,
// once it is ready, once its longest wait passed, or once ctx is done,
// and not before any of them; it reports true only when the view is ready.
func TestWaitCalendarsReturnsWhenTheViewStops(t *testing.T) {
	recovering := func() error { return errors.New("recovering") }
	for _, c := range []struct {
		name string
		most time.Duration
		run  func(stop chan struct{}, cancel context.CancelFunc, ready *atomic.Bool)
		want bool
	}{
		{"view stopped", time.Hour, func(stop chan struct{}, _ context.CancelFunc, _ *atomic.Bool) { close(stop) }, false},
		{"view ready", time.Hour, func(_ chan struct{}, _ context.CancelFunc, ready *atomic.Bool) { ready.Store(true) }, true},
		{"ctx done", time.Hour, func(_ chan struct{}, cancel context.CancelFunc, _ *atomic.Bool) { cancel() }, false},
		{"longest wait", time.Second, func(chan struct{}, context.CancelFunc, *atomic.Bool) {}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := make(chan struct{})
			var ready, released, got atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				got.Store(awaitReady(ctx, func() error {
					if ready.Load() {
						return nil
					}
					return recovering()
				}, stop, c.most))
				released.Store(true)
			}()
			// Still waiting while the view recovers (a number of polls).
			for range 10 {
				time.Sleep(25 * time.Millisecond) // lets the 20 ms poll run; not a timing assertion
				if released.Load() {
					t.Fatal("awaitReady returned while the view was recovering")
				}
			}
			c.run(stop, cancel, &ready)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("awaitReady did not return")
			}
			if got.Load() != c.want {
				t.Fatalf("awaitReady reported ready %v, want %v", got.Load(), c.want)
			}
		})
	}
}
