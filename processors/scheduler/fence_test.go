package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
)

// sessionCtx is a goka.Context whose only method in use is Context.
type sessionCtx struct {
	gokaContext
	c context.Context
}

type gokaContext = goka.Context

func (x sessionCtx) Context() context.Context { return x.c }

// A session that began before a freeze writes nothing more; sessions that
// begin after it, and every session when the process was never frozen, go
// on. The freeze is simulated by not looking at the clock for longer than
// the limit (the watchdog's goroutine is not started here).
func TestFenceStopsSessionsThatBeganBeforeAFreeze(t *testing.T) {
	const limit = 30 * time.Millisecond
	w := &watchdog{limit: limit, start: time.Now()}
	f := &fence{w: w}
	ca, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	a := sessionCtx{c: ca}

	// Looks closer together than the limit: no freeze, however long in all.
	for i := 0; i < 10; i++ {
		require.NoError(t, f.check(a))
		time.Sleep(limit / 3)
	}

	time.Sleep(3 * limit) // the process is "stopped": nobody looks
	require.ErrorIs(t, f.check(a), errFrozen, "a session that began before the freeze must not write")
	require.ErrorIs(t, f.check(a), errFrozen, "and stays fenced")

	cb, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	b := sessionCtx{c: cb}
	require.NoError(t, f.check(b), "a session that began after the freeze writes")
	require.ErrorIs(t, f.check(a), errFrozen)

	// A session's entry goes when its context ends.
	cancelA()
	require.Eventually(t, func() bool {
		_, ok := f.sessions.Load(ca)
		return !ok
	}, 5*time.Second, time.Millisecond)
}

// The process-wide watchdog sees no freeze while the process runs.
func TestWatchdogSeesNoFreezeWhileRunning(t *testing.T) {
	e := freezes.epoch1()
	deadline := time.Now().Add(4 * freezeTick)
	for time.Now().Before(deadline) {
		require.Equal(t, e, freezes.epoch1())
		time.Sleep(freezeTick / 5)
	}
}
