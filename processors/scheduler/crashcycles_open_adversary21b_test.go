//go:build adversary21b

package scheduler

import "testing"

// Open after round 21b's fix: two seeds of the crash-cycle property
// (TestAdv21bCrashCycles) in 1000-2999 still send one fire twice after
// 7-10 crash-restart cycles with passes spread over callbacks (1 ns
// budget). In 2085 the crash cuts the store's WAL back to an IndexedUpTo
// of 12:03:56 under a table at 12:05:41 with a pass to 12:06:07 under
// way: the index is rebuilt, and a continuation from the start of the
// index (a pass begun while another was under way) sends b@12:06:00
// again with its fire_id and payload. That is a repeat after a crash,
// which docs/reliability.md allows; the property is stricter. Run:
//
//	go test -tags adversary21b -count=1 -run TestAdv21bCrashCyclesOpenSeeds ./processors/scheduler/
func TestAdv21bCrashCyclesOpenSeeds(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		fire string
	}{{1197, "c@2026-03-01T12:08:00Z"}, {2085, "b@2026-03-01T12:06:00Z"}} {
		_, want := adv21bHistory(t, c.seed, false, *adv21bOps)
		_, got := adv21bHistory(t, c.seed, true, *adv21bOps)
		if want[c.fire] != 1 || got[c.fire] != 1 {
			t.Errorf("seed %d: %s dispatched %d times with crashes, %d without", c.seed, c.fire, got[c.fire], want[c.fire])
		}
	}
}
