package instance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHistoryStartsAfterScheduling: the history group and the history
// view start (scheduling is closed) once the scheduling parts are ready,
// or once their longest wait passed (with a warning), and never while
// they recover or after ctx ended. A new instance recovers the tables it
// schedules from first (docs/architecture.md, "Recovery: scheduling
// first").
func TestHistoryStartsAfterScheduling(t *testing.T) {
	for _, c := range []struct {
		name      string
		most      time.Duration
		act       func(cancel context.CancelFunc, ready *atomic.Bool)
		wantOpen  bool // scheduling still open when awaitStage returned
		wantWarns bool
	}{
		{"ready", time.Hour, func(_ context.CancelFunc, ready *atomic.Bool) { ready.Store(true) }, false, false},
		{"longest wait", 400 * time.Millisecond, func(context.CancelFunc, *atomic.Bool) {}, false, true},
		{"ctx done", time.Hour, func(cancel context.CancelFunc, _ *atomic.Bool) { cancel() }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ready atomic.Bool
			var polls atomic.Int64
			scheduling := make(chan struct{})
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			done := make(chan struct{})
			go func() {
				defer close(done)
				awaitStage(ctx, func() error {
					polls.Add(1)
					if ready.Load() {
						return nil
					}
					return errors.New("group chronos-scheduler is recovering")
				}, scheduling, time.Now(), c.most, log, "the scheduling parts are not ready", "the history group and view")
			}()
			// Still closed to the history while the scheduling parts recover.
			for polls.Load() < 10 {
				time.Sleep(5 * time.Millisecond)
			}
			select {
			case <-scheduling:
				t.Fatal("the history may start while the scheduling parts recover")
			default:
			}
			c.act(cancel, &ready)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("awaitStage did not return")
			}
			open := true
			select {
			case <-scheduling:
				open = false
			default:
			}
			if open != c.wantOpen {
				t.Fatalf("scheduling open %v, want %v", open, c.wantOpen)
			}
			if warned := strings.Contains(logs.String(), "starting the history group and view anyway"); warned != c.wantWarns {
				t.Fatalf("warned %v, want %v: %s", warned, c.wantWarns, logs.String())
			}
		})
	}
}
