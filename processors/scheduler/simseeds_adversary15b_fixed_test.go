package scheduler

import "testing"

// TestAdv15bSimSeeds replays the simulation seeds round 15b found at 1500
// operations (seeds 20001-20500; the ranges being run elsewhere are 1-1000
// and 7001-10100 at 800), each failing on 8f581ec:
//
//   - 20237: "two payloads (bug 6 late update)": fire_id j4@10:11:00Z went
//     out with payload put 119 and then put 127. Reduced to
//     TestAdv15bOwnSettleIgnoresItsTOnARebuiltIndex (a settle of the job's
//     own version, consumed on an empty store before the put, ignores the
//     T that says how far the paused job's fires went).
//   - 20476: "derived index": after a pass completed, the local index kept
//     j5@14:46:00 (behind the watermark 14:46:07) where a rebuild from the
//     table gives 14:46:30. A crash (store kept, local writes lost) undid
//     the move of j5 after its 14:46:00 went out, and copies of the pass's
//     continuation whose cursor was already past j5 finished the pass; the
//     next advance sent j5@14:46:00 again (same payload: a repeat). The
//     property docs/reliability.md ("The index is derived: how it is
//     checked") says holds wherever a partition consumed all its input.
//
// Seed 20446 also fails (a bucket member "missing"), but that is the
// oracle's reading: j4, an `at` job active when trigger t62 was consumed,
// fired its time and completed before the fan-out's chunk reached it three
// hours later; docs/topics.md says completed jobs do not fire, as of the
// chunk ("the payload it had when its chunk ran"); 30387 x 3000 is the same
// reading. At 3000 operations (seeds 30001-30500) 30109 fails with 76 "two
// payloads": a late pause and a put consumed on a new owner *before* the old
// version's settles (the known open finding, docs/reliability.md); 30147
// (a bucket member "missing") and 30437 ("two payloads", "unexpected fire")
// were not classified in the time of this round.
func TestAdv15bSimSeeds(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{20237, 20476} {
		w := newSimWorld(t, seed, 1500)
		w.run()
		for _, v := range w.oracle.violations {
			if !simKnownOpen[v.bug] {
				t.Errorf("seed %d x 1500:\n%s", seed, w.oracle.report(seed, w.cfg.String()))
				break
			}
		}
	}
}
