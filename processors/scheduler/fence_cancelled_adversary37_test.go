package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
)

// gokaCancelledCtx behaves as goka v1.1.16's context once the partition's
// context is cancelled: Fail records the error and returns.
type gokaCancelledCtx struct {
	gokaContext
	c        context.Context
	failures []error
	commitEr []error
	writes   [][]byte
}

func (x *gokaCancelledCtx) Context() context.Context { return x.c }
func (x *gokaCancelledCtx) Key() string              { return "job" }
func (x *gokaCancelledCtx) Partition() int32         { return 0 }
func (x *gokaCancelledCtx) Fail(err error) {
	if x.c.Err() == nil {
		panic(err)
	}
	x.failures = append(x.failures, err)
}
func (x *gokaCancelledCtx) DeferCommit() func(error) {
	return func(err error) { x.commitEr = append(x.commitEr, err) }
}
func (x *gokaCancelledCtx) SetValue(v any, _ ...goka.ContextOption) {
	x.writes = append(x.writes, v.([]byte))
}

// TestAdversary37FencedSessionStillWritesOnceCancelled: a session that
// began before a freeze must write nothing more (fence.go). Once goka has
// cancelled the session's context (the rebalance the freeze causes), the
// guard's failed() does not stop the callback (goka's Fail returns), and
// the check itself may find no entry (AfterFunc deleted it) and pass: the
// write is made anyway, and lands in the changelog after the new owner's.
func TestAdversary37FencedSessionStillWritesOnceCancelled(t *testing.T) {
	s, freeze := fencedScheduler()

	c, cancel := context.WithCancel(context.Background())
	x := &gokaCancelledCtx{c: c}
	s.guard(x) // the session begins (live)
	require.Empty(t, x.writes)

	freeze()
	cancel() // goka cancels the session at the rebalance
	time.Sleep(50 * time.Millisecond)

	stopped := setValueStopped(s, x, []byte("stale"))
	t.Logf("fence failures recorded: %v; commit errors: %v; writes made: %q; stopped with: %v", x.failures, x.commitEr, x.writes, stopped)
	require.Empty(t, x.writes, "a fenced session wrote to the table after the freeze")
	require.ErrorIs(t, stopped, errFrozen, "the callback stops")
	require.NotEmpty(t, x.commitEr, "its commit is withheld")

	// A session first seen after its cancellation cannot be judged: it
	// writes nothing either.
	c2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	y := &gokaCancelledCtx{c: c2}
	require.ErrorIs(t, setValueStopped(s, y, []byte("late")), errSessionOver)
	require.Empty(t, y.writes)
	require.NotEmpty(t, y.commitEr)
}

// fencedScheduler returns a scheduler with a fence on a fake clock, and a
// func that makes the process look frozen past the fence's limit.
func fencedScheduler() (*Scheduler, func()) {
	const limit = 5 * time.Second
	var now time.Duration
	w := &watchdog{limit: limit, since: func() time.Duration { return now }}
	return &Scheduler{fence: &fence{w: w}}, func() { now += limit + time.Second }
}

// setValueStopped calls s.setValue and returns the error the callback
// stopped with (goka recovers it), nil if it went on.
func setValueStopped(s *Scheduler, ctx goka.Context, v []byte) (stopped error) {
	defer func() {
		if r := recover(); r != nil {
			stopped = r.(error)
		}
	}()
	s.setValue(ctx, v)
	return nil
}

// gokaStoppingCtx: the fence's session entry is still there (Context is
// the session's, AfterFunc not yet run) but goka's runner context is
// cancelled, so Fail records the error and returns (the same context in
// goka; split here to fix the order).
type gokaStoppingCtx struct {
	gokaCancelledCtx
	stopping bool
}

func (x *gokaStoppingCtx) Fail(err error) {
	if !x.stopping {
		panic(err)
	}
	x.failures = append(x.failures, err)
}

func TestAdversary37FencedSessionWritesWhenFailReturns(t *testing.T) {
	s, freeze := fencedScheduler()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := &gokaStoppingCtx{gokaCancelledCtx: gokaCancelledCtx{c: c}}
	s.guard(x)
	freeze()
	x.stopping = true // goka's context is cancelled
	stopped := setValueStopped(s, x, []byte("stale"))
	t.Logf("fence failures recorded: %v; commit errors: %v; writes made: %q; stopped with: %v", x.failures, x.commitEr, x.writes, stopped)
	require.ErrorIs(t, stopped, errFrozen)
	require.NotEmpty(t, x.failures, "the fence saw the freeze")
	require.Empty(t, x.writes, "a fenced session wrote to the table after the freeze")
}
