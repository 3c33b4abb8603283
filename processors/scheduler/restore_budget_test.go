package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

// TestRestoreCutsSpansCallbacks: a store that begins to follow a pass from
// its middle (a new owner, a restart) reads every entry behind the pass's
// cursor before it continues (restoreCuts, rederive.go), and that read is
// bounded by the chunk budget like the fan-out: a partition of a million
// jobs is not held for seconds by one callback. Here 200 jobs every 20s
// (one fire each in the pass to 10:00:20, a few a chunk with 1 KiB
// chunks, one chunk a callback) and a crash once the pass's cursor is past
// j140 at 10:00:20: the new owner, restored from the changelog with a 1 ns budget,
// reads the ~150 entries behind the cursor a group of 64 at a time, one
// group a callback, moving those the pass handled through 10:00:20 past
// it (round 27: before, they stayed for rederive, and a continuation sent
// twice fired them again), then continues the pass. Every fire of the run
// without the crash goes out, and none twice. With cut jobs among them (every other job
// every 1s, fire_all, a 200-byte payload: cut after 2 fires, 100 cuts, so
// PassCutsLost), entries behind the cursor move too, a group at a time:
// nothing is lost, and what repeats (PassCutsLost's cost) repeats with its
// one payload.
func TestRestoreCutsSpansCallbacks(t *testing.T) {
	t.Parallel()
	for _, cuts := range []bool{false, true} {
		t.Run(fmt.Sprintf("cuts=%v", cuts), func(t *testing.T) { testRestoreCutsSpansCallbacks(t, cuts) })
	}
}

func testRestoreCutsSpansCallbacks(t *testing.T, cuts bool) {
	const jobs = 200
	run := func(crash bool) (fired map[string][]string, restoring, rederiving int) {
		h := adv24Harness(t)
		var keys []string
		for i := range jobs {
			k := fmt.Sprintf("j%03d", i)
			keys = append(keys, k)
			def := `{"every":"20s"}`
			if cuts && i%2 == 1 {
				def = `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"` + strings.Repeat("x", 200) + `"}}`
			}
			h.command(k, adv24Base, `{"v":1,"op":"put","job":`+def+`}`)
		}
		h.drain()
		T := adv24Base.Add(20 * time.Second)
		h.advance(T)
		for len(h.loops) > 0 {
			if sh := h.shard(); crash && sh.PassAt.Equal(T) && sh.PassKey > "j140" {
				adv24Restore(h, keys...)
				h.advance(T) // delivered again (its offset was not committed)
				for {
					if _, pending := h.s.passes.restoreFrom(0); !pending {
						break
					}
					restoring++
					require.Less(t, restoring, 10, "the restore ends")
					l := h.loops[len(h.loops)-1] // the restore's own continuation
					h.loops = h.loops[:len(h.loops)-1]
					h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
				}
				crash = false
				continue
			}
			l := h.loops[0]
			h.loops = h.loops[1:]
			h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
			if after := h.s.passes.rederiveFrom(0); after != (store.Due{}) && !h.shard().Advancing.IsZero() {
				rederiving++ // a callback that re-derived entries and left the pass under way
			}
		}
		for _, at := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
			h.advance(at)
			h.drain()
		}
		if crash {
			h.requireOnePayload()
		}
		return h.fired(), restoring, rederiving
	}
	ctrl, _, _ := run(false)
	got, restoring, rederiving := run(true)
	require.GreaterOrEqual(t, restoring, 1, "the entries behind the cursor take more than one callback to restore")
	// The restore moved every entry the pass handled: the rederive finds
	// none to move, in one callback (TestRederiveSpansCallbacks has it
	// move some).
	require.Zero(t, rederiving, "the rederive had entries left after the restore")
	require.Empty(t, adv24Missing(ctrl, got), "fires lost after the crash")
	if !cuts {
		require.Len(t, ctrl, 3*jobs, "the control fires each job at 10:00:20, :40 and 10:01:00")
		for id, ps := range got {
			require.Len(t, ps, 1, "fire %s went out %d times", id, len(ps))
		}
	}
}

// TestRederiveSpansCallbacks: rederive, when a pass completes on a store
// that followed it only from the middle, moves the entries due up to T
// whose records say they are due later, a group of 64 at a time within the
// chunk budget, each call resuming after the last entry the one before
// read; with a 1 ns budget, 200 misplaced entries take 4 calls and all
// move. (After round 27's restore, such entries are rare: the ones a
// command wrote behind the cursor. Here the store's index is simply
// behind its table: 200 jobs every 20s, due at 10:00:20, re-derived as if
// a pass to 10:00:20 had fired them.)
func TestRederiveSpansCallbacks(t *testing.T) {
	h := adv24Harness(t)
	for i := range 200 {
		h.command(fmt.Sprintf("j%03d", i), adv24Base, `{"v":1,"op":"put","job":{"every":"20s"}}`)
	}
	h.drain()
	T := adv24Base.Add(20 * time.Second)
	calls, moved, after := 0, 0, store.Due{}
	for {
		calls++
		require.Less(t, calls, 50, "the rederive ends")
		n, next, all, err := h.s.rederive(h.st, T, after, time.Now())
		require.NoError(t, err)
		moved += n
		if all {
			break
		}
		require.NotEqual(t, after, next, "a call that read nothing and did not finish")
		after = next
	}
	require.Equal(t, 4, calls, "64 entries a call (200 entries: 64, 64, 64, 8)")
	require.Equal(t, 200, moved)
	left, err := h.st.DueUpTo(T, store.Due{}, 1000)
	require.NoError(t, err)
	require.Empty(t, left, "entries still due up to T")
	for i := range 200 {
		at, err := h.st.DueOf(fmt.Sprintf("j%03d", i))
		require.NoError(t, err)
		require.Equal(t, T.Add(20*time.Second), at)
	}
}
