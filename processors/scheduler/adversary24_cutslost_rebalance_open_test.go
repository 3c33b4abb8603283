//go:build adversary24open

package scheduler

import (
	"sort"
	"testing"
	"time"
)

// Open (docs/reliability.md): run with
//
//	go test -tags adversary24open -count=1 -run TestAdv24CutsLostCleanRebalanceRepeats ./processors/scheduler/
//
// TestAdv24CutsLostCleanRebalanceRepeats: promise (docs/reliability.md, "A
// clean rebalance in the middle of an advance"; TestAdv18bFallbackOverlap-
// RefiresAfterCleanRebalance): duplicates only after a crash; a clean
// rebalance mid-advance repeats nothing.
//
// The uncommitted restoreCuts for PassCutsLost (more than MaxPassCuts = 64
// jobs cut and not yet handled again) moves EVERY entry at or behind the
// pass's cursor on a store that did not follow the pass to its first time
// after the cursor's time. Its comment accepts that jobs the pass handled
// through T "repeat those times ... which a crash may do"; but the same
// path runs on a clean rebalance (nothing lost, every settle applied), and
// those jobs then go out again.
//
// ChunkBytes 1 KiB (its minimum) and ~200-byte payloads: a plan takes 2
// fires. a000..a004: cron "3,15 * * * * *", put at 10:00:00 (each owes
// 10:00:03 and 10:00:15 in the advance: one plan, handled through T, no
// loopback, record unchanged). j000..j069: every 1s, put at 10:00:05 (owe
// 10:00:06 .. 10:00:20: cut after 2 fires each). The advance to 10:00:20,
// one chunk a callback (ChunkBudget 1ns), handles the a-jobs, then cuts the
// j-jobs one by one; once 65 are cut the yield records PassCutsLost
// (cursor (10:00:06, j06x)). At that yield, with every settle consumed and
// only the continuation left, the partition moves cleanly to an instance
// with an empty store (the table as it is). The a-jobs' entries derive from
// their unchanged records to 10:00:03, behind the cursor; restoreCuts moves
// them to 10:00:15, and the continuation sends a00x@10:00:15 again.
//
// Expected: no fire_id twice (as with 10 j-jobs, PassCuts kept, or on
// 3bee8cd). Got: a00x@10:00:15 sent twice. Severity low (same payload;
// consumers dedupe on fire_id), but it is a regression of a documented
// property, and with many small jobs behind the cursor it repeats every one
// of their fires between the cursor's time and T.
func TestAdv24CutsLostCleanRebalanceRepeats(t *testing.T) {
	t.Parallel()
	h, T := adv24CutsLostPass(t, func(*partitionHarness) {})
	h.advance(T.Add(time.Second))
	h.drain()
	h.requireOnePayload()
	var dup []string
	for id, ps := range h.fired() {
		if len(ps) > 1 {
			dup = append(dup, id)
		}
	}
	sort.Strings(dup)
	if len(dup) > 0 {
		t.Errorf("after a clean rebalance, %d fire_ids went out twice: %v", len(dup), dup)
	}
}
