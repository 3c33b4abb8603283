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
// on. The clock is fake: a freeze is a jump of the time since the last look
// by more than the limit.
func TestFenceStopsSessionsThatBeganBeforeAFreeze(t *testing.T) {
	const limit = 5 * time.Second
	var now time.Duration
	w := &watchdog{limit: limit, since: func() time.Duration { return now }}
	f := &fence{w: w, linger: 200 * time.Millisecond}
	ca, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	a := sessionCtx{c: ca}

	// Looks closer together than the limit: no freeze, however long in all.
	for i := 0; i < 100; i++ {
		require.NoError(t, f.check(a))
		now += limit / 2
	}
	require.NoError(t, f.check(a))
	now += limit // exactly the limit since the last look: not a freeze
	require.NoError(t, f.check(a))

	now += limit + time.Millisecond // the process was stopped: nobody looked
	require.ErrorIs(t, f.check(a), errFrozen, "a session that began before the freeze must not write")
	require.ErrorIs(t, f.check(a), errFrozen, "and stays fenced")

	cb, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	b := sessionCtx{c: cb}
	require.NoError(t, f.check(b), "a session that began after the freeze writes")
	require.ErrorIs(t, f.check(a), errFrozen)

	// A session is remembered for a while after its context ends (a
	// callback of it may still run: it stays fenced), then forgotten.
	cancelA()
	require.ErrorIs(t, f.check(a), errFrozen, "still fenced once cancelled")
	require.Eventually(t, func() bool {
		_, ok := f.sessions.Load(ca)
		return !ok
	}, 5*time.Second, time.Millisecond)
}

// The process-wide watchdog sees no freeze while the process runs.
func TestWatchdogSeesNoFreezeWhileRunning(t *testing.T) {
	e := freezes().epoch1()
	deadline := time.Now().Add(4 * freezeTick)
	for time.Now().Before(deadline) {
		require.Equal(t, e, freezes().epoch1())
		time.Sleep(freezeTick / 5)
	}
}
