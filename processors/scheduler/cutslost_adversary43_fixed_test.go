package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Adversary round 43 (on da9026b): failed there and on 71f840a, passed on
// 71f840a~1. Fixed since: a command on a job the pass under way may have
// reached (maybeSent) plans its times as that pass does (passOf's
// reached), wherever the cursor says the entry is.

// adv43CutsLostWorld: the shard at W = 10:00:00. j (every 1s, skip, grace
// 60s) and 65 fillers k00 .. k64 (the same) are put late with ts 09:59:10:
// each owes 09:59:11 .. 10:00:01. Chunk bytes 1024 make the pass to A =
// 10:00:01 cut every one of them after a few fires: more than 64 cut jobs,
// so the shard record keeps only its cursor (PassCutsLost). Once the
// cursor is at (X, k64), X a later second than j's original entry, the
// advance to Q = 10:01:40 arrives and waits (Queued), and the partition
// moves to an empty store, the jobs' settles still in flight (j's record
// says only its late put: its entry is derived at 09:59:11, behind the
// cursor). Then a pause of j (ts A) is consumed (late: the pause's own
// ts at A). Control (late false): the pause after the pass to A completed.
func adv43CutsLostWorld(t *testing.T, late bool) *partitionHarness {
	h, _ := adv42SmallHarness(t, 0, 1024)
	W := adv41Base
	h.advance(W)
	h.drain()
	put := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"60s","payload":{"j":1}}}`
	keys := []string{"j"}
	for i := 0; i <= 64; i++ {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	for _, k := range keys {
		h.command(k, W.Add(-50*time.Second), put)
	}
	A := W.Add(time.Second)
	Q := W.Add(100 * time.Second)
	pause := func() { h.command("j", A, `{"v":1,"op":"pause"}`) }
	h.advance(A)
	if !late {
		h.drain()
		pause()
		h.advance(Q)
		h.drain()
		h.advance(Q.Add(time.Second))
		h.drain()
		return h
	}
	jEntry := W.Add(-49 * time.Second)
	for i := 0; ; i++ {
		require.Less(t, i, 5000)
		sh := h.shard()
		if sh.PassCutsLost && sh.PassAt.After(jEntry) && sh.PassKey == "k64" {
			t.Logf("cursor %s %s, lost %v", sh.PassAt.Format("15:04:05.000"), sh.PassKey, sh.PassCutsLost)
			break
		}
		h.deliverLoops(h.shardKey())
	}
	h.advance(Q)
	require.Len(t, h.shard().Queued, 1, "%+v", h.shard())
	h.moveToEmptyStore(keys...)
	// The jobs' settles are still in flight: consumed after the pause.
	var shardLoops, jobLoops []simOut
	for _, l := range h.loops {
		if l.Key == h.shardKey() {
			shardLoops = append(shardLoops, l)
		} else {
			jobLoops = append(jobLoops, l)
		}
	}
	require.NotEmpty(t, shardLoops, "the pass's continuation")
	h.loops = nil
	pause()
	h.loops = append(append(h.loops, shardLoops...), jobLoops...)
	h.drain()
	h.advance(Q.Add(time.Second))
	h.drain()
	return h
}

// TestAdversary43CutsLostPauseJudgedAgainstQueued: promise (docs/topics.md:
// "when the shard cannot tell how far an advance under way took the job
// (... or the partition moved in the middle of an advance that had cut
// more than 64 late jobs short), a pause of a job that advance may have
// reached first dispatches the job's times up to the advance's time, as
// if the advance had reached the job before the pause"; no fire lost).
// The pass to A judges j's times against A (grace 60s: 09:59:11 .. A all
// on time) and sends them all when the pause comes after it. The pause
// consumed mid-pass after the move re-sends j's times from the cursor's
// time to A through sendOwed, whose passOf takes j's entry (at the
// cursor's time, key j before k64: behind the cursor) as one the pass
// under way never reaches, and judges them against the advance waiting,
// Q = 10:01:40: all more than 60s late, skipped.
func TestAdversary43CutsLostPauseJudgedAgainstQueued(t *testing.T) {
	t.Parallel()
	ctrl := adv41Fires(t, adv43CutsLostWorld(t, false), "j")
	got := adv41Fires(t, adv43CutsLostWorld(t, true), "j")
	t.Logf("pause after the pass: %s", adv41String(ctrl))
	t.Logf("pause mid-pass:       %s", adv41String(got))
	require.Equal(t, adv41Times(ctrl), adv41Times(got), "j's times up to A")
}
