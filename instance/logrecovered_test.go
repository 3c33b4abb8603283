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

// TestRecoveredIsLoggedAfterTheJobViewWait: when the scheduling groups
// recover only after JobViewWait has started the job view without them,
// "the scheduling groups have recovered their partitions" is still
// logged, with the time since the start (it was logged only when the
// first stage succeeded: the slow starts it measures went without it).
// A start cancelled before they recover logs nothing.
func TestRecoveredIsLoggedAfterTheJobViewWait(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		// A plain buffer: logRecovered writes only once the groups have
		// recovered, after the read below, and is read again after done.
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		start := time.Now().Add(-JobViewWait) // the first stage times out at once
		var recovered atomic.Bool
		scheduled := func() error {
			if recovered.Load() {
				return nil
			}
			return errors.New("partitions recovering")
		}
		open := make(chan struct{})
		if awaitStage(ctx, scheduled, open, start, JobViewWait, log, "the scheduling groups have not recovered", "the job view") {
			t.Fatal("the first stage reported the groups recovered")
		}
		select {
		case <-open:
		default:
			t.Fatal("the job view did not start after JobViewWait")
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			logRecovered(ctx, scheduled, start, log)
		}()
		time.Sleep(100 * time.Millisecond) // still waiting: the groups have not recovered
		if strings.Contains(logs.String(), "have recovered their partitions") {
			t.Fatalf("logged before the groups recovered:\n%s", logs.String())
		}
		if cancelFirst {
			cancel()
		} else {
			recovered.Store(true)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("logRecovered did not return")
		}
		out := logs.String()
		switch {
		case cancelFirst && strings.Contains(out, "have recovered their partitions"):
			t.Fatalf("a cancelled start logged the groups recovered:\n%s", out)
		case !cancelFirst && !strings.Contains(out, `msg="the scheduling groups have recovered their partitions" after=5m0`):
			t.Fatalf("no line for groups that recovered after JobViewWait (with the time since the start):\n%s", out)
		}
		cancel()
	}
}
