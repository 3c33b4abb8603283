package main

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGCPercentGivesTheHeapBesidesTheStoresItsHeadroom checks gcPercent on
// generated cases: the heap goal it gives, live × (1 + p/100), leaves base
// percent of the live heap besides the stores' (to within the percent's
// rounding), never less than gcPaceMinPercent (or base, if lower) and never
// more than base; and more held never gives a higher percent.
func TestGCPercentGivesTheHeapBesidesTheStoresItsHeadroom(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 63))
	for i := 0; i < 100000; i++ {
		base := []int{1, 5, 10, 50, 100, 200, 1000}[r.IntN(7)]
		live := r.Uint64N(8<<30) + 1
		held := r.Uint64N(live + live/4) // sometimes more than live: measured at another moment
		p := gcPercent(base, live, held)
		floor := min(base, gcPaceMinPercent)
		require.GreaterOrEqual(t, p, floor, "base %d live %d held %d", base, live, held)
		require.LessOrEqual(t, p, base, "base %d live %d held %d", base, live, held)
		if held < live && p > floor {
			want := float64(live-held) * float64(base) / 100 // the headroom of the heap besides the stores
			got := float64(live) * float64(p) / 100
			require.LessOrEqual(t, got, want*1.000001, "base %d live %d held %d: headroom %f, want at most %f", base, live, held, got, want)
			require.Greater(t, got, want-float64(live)/100-1, "base %d live %d held %d: headroom %f, want about %f", base, live, held, got, want)
		}
		if more := held + r.Uint64N(live/2+1); more > held {
			require.LessOrEqual(t, gcPercent(base, live, more), p, "base %d live %d: held %d then %d", base, live, held, more)
		}
	}
	require.Equal(t, 100, gcPercent(100, 1<<30, 0), "nothing held")
	require.Equal(t, 100, gcPercent(100, 0, 1<<20), "nothing live measured yet")
	require.Equal(t, 50, gcPercent(100, 1<<30, 1<<29))
}

// TestPaceBaseHalvesGosDefaultOnlyWhenGOGCIsUnset: without GOGC in the
// environment and without the embedded broker the pacer gives the heap
// besides the stores half of what is live (gcPaceDefaultPercent); a GOGC
// set in the environment, or a percent the process set itself, is the
// pacer's base as it is.
func TestPaceBaseHalvesGosDefaultOnlyWhenGOGCIsUnset(t *testing.T) {
	require.Equal(t, gcPaceDefaultPercent, paceBase(100, false, false), "nothing set: the pacer's default")
	require.Equal(t, 50, gcPaceDefaultPercent)
	require.Equal(t, 100, paceBase(100, false, true), "the embedded broker's log on the heap: Go's default")
	for _, embedded := range []bool{false, true} {
		for _, found := range []int{0, 10, 50, 100, 200, 1000} {
			require.Equal(t, found, paceBase(found, true, embedded), "GOGC=%d in the environment", found)
		}
		require.Equal(t, 200, paceBase(200, false, embedded), "a percent the process set itself (debug.SetGCPercent)")
	}
}

// TestPacingOnlyWithoutCgoCollectorOnAndNoLimit: the pacer runs only when
// the stores' memory is on Go's heap, GOGC is not off and no memory limit
// is set.
func TestPacingOnlyWithoutCgoCollectorOnAndNoLimit(t *testing.T) {
	require.True(t, shouldPace(true, 100, math.MaxInt64))
	require.True(t, shouldPace(true, 0, math.MaxInt64), "GOGC=0 is on (collect all the time)")
	require.False(t, shouldPace(false, 100, math.MaxInt64), "cgo: the stores' memory is not Go heap")
	require.False(t, shouldPace(true, -1, math.MaxInt64), "GOGC=off")
	require.False(t, shouldPace(true, 100, 900<<20), "GOMEMLIMIT or the cgroup's limit")
}

// TestGCPacerSetsOnlyChangesAndGivesTheBaseBack drives a pacer with
// recorded values: it sets GOGC when the percent changes, not again for the
// same one, and sets the base back when its context ends.
func TestGCPacerSetsOnlyChangesAndGivesTheBaseBack(t *testing.T) {
	var sets []int
	held := uint64(0)
	p := &gcPacer{base: 100, restore: 100, percent: 100, live: func() uint64 { return 1000 }, held: func() uint64 { return held },
		set: func(g int) int { sets = append(sets, g); return 0 }}
	p.pace()
	require.Empty(t, sets, "nothing held: GOGC stays the base")
	held = 600
	p.pace()
	p.pace()
	require.Equal(t, []int{40}, sets)
	held = 980
	p.pace()
	require.Equal(t, []int{40, gcPaceMinPercent}, sets)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.run(ctx)
	require.Equal(t, []int{40, gcPaceMinPercent, 100}, sets, "run paces once, then gives the base back when its context ends")
}

// TestGCPacerBoundsTheHeapOverABallast runs the pacer on the real collector.
// A 256 MiB byte slice stands for the stores' memtables and caches (held),
// and the test allocates 1.5 GiB of garbage beside it, watching the
// collector's heap goal and the heap's peak. Without pacing Go sets the
// goal at twice what it marked live or more; paced, at what it marked live
// plus 10%. What it marks live is the ballast, the pieces kept, and the
// garbage allocated while it marked, which it counts as live until the next
// cycle: that last part grows when the machine is busy (the collector's
// workers get less CPU while the loop allocates), so the goal is checked
// against the live heap read with it, not against a fixed size. Paced goals
// 355-384 MiB in three runs on a quiet machine, against 566-792 unpaced; 423
// against 707 in a CI run with the other packages' tests beside it.
func TestGCPacerBoundsTheHeapOverABallast(t *testing.T) {
	const ballastBytes = 256 << 20
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	ballast := make([]byte, ballastBytes)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	// churn gives the highest goal seen, the live heap read with it, and
	// the highest heap objects' size seen.
	churn := func() (goal, live, peak uint64) {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		var keep [][]byte
		for i := 0; i < 24576; i++ { // 1.5 GiB in 64 KiB pieces, 64 of them kept at a time
			b := make([]byte, 64<<10)
			b[0] = byte(i)
			if len(keep) < 64 {
				keep = append(keep, b)
			} else {
				keep[i%64] = b
			}
			if i%16 == 0 {
				metrics.Read(s)
				if g := s[0].Value.Uint64(); g > goal {
					goal, live = g, s[2].Value.Uint64()
				}
				peak = max(peak, s[1].Value.Uint64())
			}
		}
		runtime.KeepAlive(keep)
		return goal, live, peak
	}
	unpacedGoal, unpacedLive, unpacedPeak := churn()
	runtime.GC()
	p := &gcPacer{base: 100, restore: 100, percent: 100, live: liveHeap, held: func() uint64 { return ballastBytes }, set: debug.SetGCPercent}
	p.pace()
	require.Equal(t, gcPaceMinPercent, p.percent, "the ballast is nearly all of the live heap")
	pacedGoal, pacedLive, pacedPeak := churn()
	runtime.KeepAlive(ballast)
	t.Logf("over a %d MiB ballast: heap goal %d MiB unpaced (%d marked live), %d MiB paced (%d marked live); heap objects' peak (unswept garbage included) %d MiB unpaced, %d MiB paced",
		ballastBytes>>20, unpacedGoal>>20, unpacedLive>>20, pacedGoal>>20, pacedLive>>20, unpacedPeak>>20, pacedPeak>>20)
	// The goal also counts the goroutines' stacks and the globals at the
	// percent: a few MiB here.
	const roots = 16 << 20
	require.Greater(t, unpacedGoal, unpacedLive*19/10, "unpaced, the goal should be about twice what is marked live: the test's premise")
	require.Greater(t, unpacedGoal, uint64(ballastBytes*9/5), "unpaced, the goal should be about twice the ballast: the test's premise")
	require.Less(t, pacedGoal, pacedLive+pacedLive*gcPaceMinPercent/100+roots, "paced, the goal should be what is marked live plus 10%")
	require.Less(t, pacedGoal+ballastBytes/2, unpacedGoal, "paced, the goal should be lower by at least half the ballast")
	// The peak counts garbage not yet swept, which a busy machine leaves
	// more of: 87-390 MiB lower in 6 runs beside 3 busy loops.
	require.Less(t, pacedPeak+ballastBytes/4, unpacedPeak, "paced, the heap's peak should be lower by a quarter of the ballast or more")
}

// TestGOGCTypoIsWarned: a GOGC the runtime cannot read as a number is
// warned about (the runtime runs at 100 and the pacer takes it as set);
// unset, off and numbers, negative ones too, are not.
func TestGOGCTypoIsWarned(t *testing.T) {
	for _, ok := range []string{"", "off", "0", "50", "100", "400", "-1"} {
		require.Empty(t, gogcTypo(ok), "GOGC=%q", ok)
	}
	for _, typo := range []string{"abc", "50%", "1e2", "+50", "OFF", " 50", "99999999999"} {
		require.NotEmpty(t, gogcTypo(typo), "GOGC=%q", typo)
	}
}
