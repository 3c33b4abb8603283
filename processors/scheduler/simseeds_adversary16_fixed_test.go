package scheduler

import "testing"

// TestAdv16SimSeeds replays the simulation seeds round 16 found failing on
// 76cce49 (ranges run: 60001-60400 x 1500, 70001-70250 x 3000, 80001-80600
// x 1500, 90001-90500 x 1500):
//
//   - 80157 x 1500: "two payloads (bug 6 late update)": j1 (every 1m,
//     payload put 180) is paused at 16:14:03.101 owing 16:14:00; the
//     advance to 16:14:11 sends j1@16:14:00 (put 180) and queues its
//     settle. The partition moves (op 1445) to an instance whose store did
//     not follow that pass; its index, rebuilt under the watermark 16:13:52,
//     holds the paused j1 at 16:14:00 again. A put (cron */7 s, put 190)
//     consumed there before the settle asks pausedHandled, which reads the
//     stale entry (handled through 16:13:59.999; the pass's cursor is not
//     consulted for a paused job), and the next advance trigger, consumed
//     before the loopbacks (a pass begun while another is under way runs
//     from the start of the index), sends j1@16:14:00 with put 190. Reduced
//     to TestAdv16PausedOwedFiresTwoPayloadsAfterCleanRebalance (and
//     ...JitterPut, which needs no race with the next trigger). The seed
//     passes on a9ce7aa only because its history diverges there; the
//     reduced tests fail on a9ce7aa too.
//
// 130179 x 1500 fails on a9ce7aa too, with the mechanism of
// TestAdv16CursorUnderClaimLatePauseThenPutTwoPayloads: j2 (every 1s, put
// 75) sent 16:40:32 and :33; after a crash and two moves to empty stores a
// late pause (record time 16:40:24) and a late put (put 82, 16:40:30) were
// consumed there, and the put's definition sent j2@16:40:32 and :33 again
// with put 82 ("two payloads").
//
// Seeds failing on a9ce7aa as well (not caused by 76cce49, not reduced in
// this round): 70104 x 3000 ("misfire count": j1@09:37:40 carries missed=2, want 0), 70156 x
// 3000 ("unexpected fire" j4@09:35:00 not owed), 70180 x 3000 ("missing
// fire": j4@11:26:00 owed by the advance to 11:26:11 never dispatched,
// after crashes with the store kept), 80335 x 1500 ("misfire count":
// j10@10:56:12 carries missed=5, want 2), 100037 x 3000 (68 "unexpected
// fire", j1@14:42:00 first), 100351 x 3000 ("missing fire", delete+re-put,
// crashes only: j1@13:43:50 owed by the advance to 13:43:55).
func TestAdv16SimSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range []struct {
		seed int64
		ops  int
	}{{80157, 1500}} {
		w := newSimWorld(t, s.seed, s.ops)
		w.run()
		for _, v := range w.oracle.violations {
			if !simKnownOpen[v.bug] {
				t.Errorf("seed %d x %d:\n%s", s.seed, s.ops, w.oracle.report(s.seed, w.cfg.String()))
				break
			}
		}
	}
}
