package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

func TestPlanFires(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }
	every2, err := schedule.Parse(schedule.Spec{Every: 2 * time.Second})
	require.NoError(t, err)
	once, err := schedule.Parse(schedule.Spec{At: sec(4)})
	require.NoError(t, err)
	tests := []struct {
		name   string
		sched  schedule.Schedule
		due, t time.Time
		grace  time.Duration
		policy string
		fires  []Fire
		missed int64
		next   time.Time
	}{
		{"on time", every2, sec(2), sec(2), time.Minute, codecs.MisfireFireOnce, []Fire{{At: sec(2)}}, 0, sec(4)},
		{"not yet due", every2, sec(4), sec(3), time.Minute, codecs.MisfireFireOnce, nil, 0, sec(4)},
		{"late within grace fires each", every2, sec(2), sec(10), time.Minute, codecs.MisfireFireOnce,
			[]Fire{{At: sec(2)}, {At: sec(4)}, {At: sec(6)}, {At: sec(8)}, {At: sec(10)}}, 0, sec(12)},
		{"fire_once past grace", every2, sec(2), sec(10), 3 * time.Second, codecs.MisfireFireOnce,
			// 2, 4, 6 are late (> 3s); 8 and 10 are within the grace.
			[]Fire{{At: sec(6), Missed: 2}, {At: sec(8)}, {At: sec(10)}}, 2, sec(12)},
		{"skip past grace", every2, sec(2), sec(10), 3 * time.Second, codecs.MisfireSkip,
			[]Fire{{At: sec(8), Missed: 3}, {At: sec(10)}}, 3, sec(12)},
		{"skip with nothing on time", every2, sec(2), sec(10), 0, codecs.MisfireSkip,
			[]Fire{{At: sec(10), Missed: 4}}, 4, sec(12)},
		{"fire_all past grace", every2, sec(2), sec(10), 3 * time.Second, codecs.MisfireFireAll,
			[]Fire{{At: sec(2)}, {At: sec(4)}, {At: sec(6)}, {At: sec(8)}, {At: sec(10)}}, 0, sec(12)},
		{"grace boundary is on time", every2, sec(2), sec(5), 3 * time.Second, codecs.MisfireSkip,
			[]Fire{{At: sec(2)}, {At: sec(4)}}, 0, sec(6)},
		{"one-shot completes", once, sec(4), sec(5), time.Minute, codecs.MisfireFireOnce, []Fire{{At: sec(4)}}, 0, time.Time{}},
		{"one-shot late past grace fires once", once, sec(4), sec(600), time.Minute, codecs.MisfireFireOnce,
			[]Fire{{At: sec(4)}}, 0, time.Time{}},
		{"one-shot late past grace skipped", once, sec(4), sec(600), time.Minute, codecs.MisfireSkip, nil, 1, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := planFires(tc.sched, tc.due, tc.t, tc.grace, tc.policy, 100, maxFires, nil)
			if len(tc.fires) == 0 {
				require.Empty(t, p.Fires)
			} else {
				require.Equal(t, tc.fires, p.Fires)
			}
			require.Equal(t, tc.missed, p.Missed)
			require.True(t, tc.next.Equal(p.Next), "next %s, want %s", p.Next, tc.next)
		})
	}
}

func TestPlanFiresFireAllIsBounded(t *testing.T) {
	t.Parallel()
	s, err := schedule.Parse(schedule.Spec{Every: time.Second})
	require.NoError(t, err)
	due := time.Date(2026, 5, 1, 0, 0, 1, 0, time.UTC)
	p := planFires(s, due, due.Add(time.Hour), 0, codecs.MisfireFireAll, 10, maxFires, nil)
	// 3600 late fires (grace 0) and the on-time one at T: the latest 10
	// late fires are kept, the earlier 3590 are counted as missed.
	require.Len(t, p.Fires, 11)
	require.Equal(t, due.Add(time.Hour-10*time.Second), p.Fires[0].At)
	require.Equal(t, int64(3590), p.Missed)
	require.Equal(t, p.Missed, p.Fires[0].Missed)
}

func TestPlanFiresAfterVeryLongDowntimeIsBounded(t *testing.T) {
	t.Parallel()
	s, err := schedule.Parse(schedule.Spec{Every: time.Second})
	require.NoError(t, err)
	due := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	now := due.Add(30 * 24 * time.Hour) // 2.6 million missed seconds
	p := planFires(s, due, now, 5*time.Second, codecs.MisfireFireOnce, 100, maxFires, nil)
	require.True(t, p.Next.After(now))
	// The on-time fires of the last 5 s are all dispatched.
	var onTime int
	for _, f := range p.Fires {
		if !f.At.Before(now.Add(-5 * time.Second)) {
			onTime++
		}
	}
	require.Equal(t, 6, onTime)
	require.GreaterOrEqual(t, p.Missed, int64(maxSteps-1))
}

func TestPlanFiresHugeGraceIsBoundedAndMovesForward(t *testing.T) {
	t.Parallel()
	s, err := schedule.Parse(schedule.Spec{Every: time.Second})
	require.NoError(t, err)
	due := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	now := due.Add(84 * time.Hour) // every fire is within a 7-day grace
	p := planFires(s, due, now, 7*24*time.Hour, codecs.MisfireFireOnce, 100, maxFires, nil)
	require.Len(t, p.Fires, maxFires)
	require.Equal(t, due, p.Fires[0].At)
	require.Equal(t, due.Add(maxFires*time.Second), p.Next, "the job stays due at its first undispatched fire")
	require.Zero(t, p.Missed)
}

// oraclePlan is planFires by brute force: every fire up to t walked with
// Next, then split into late and on-time and shaped by the policy.
func oraclePlan(s schedule.Schedule, due, t time.Time, grace time.Duration, policy string, maxCatchUp int) (fires []Fire, missed int64, next time.Time) {
	var late, onTime []Fire
	at := due
	for ; !at.IsZero() && !at.After(t); at = s.Next(at) {
		if t.Sub(at) > grace {
			late = append(late, Fire{At: at})
		} else {
			onTime = append(onTime, Fire{At: at})
		}
	}
	switch policy {
	case codecs.MisfireSkip:
		fires, missed = onTime, int64(len(late))
	case codecs.MisfireFireAll:
		kept := late[max(len(late)-maxCatchUp, 0):]
		fires, missed = append(append([]Fire{}, kept...), onTime...), int64(len(late)-len(kept))
	default:
		fires = onTime
		if len(late) > 0 {
			missed = int64(len(late) - 1)
			fires = append([]Fire{{At: late[len(late)-1].At, Missed: missed}}, onTime...)
			return fires, missed, at
		}
	}
	if missed > 0 && len(fires) > 0 {
		fires[0].Missed += missed
	}
	return fires, missed, at
}

// TestPlanFiresMatchesOracle compares planFires with the brute-force oracle
// over generated every and cron schedules, spans, graces, policies and
// catch-up bounds; then cuts each plan with a small limit and re-plans from
// the job's next due time, as the fan-out does: the pieces put together
// are the uncut plan, and each piece respects the limit.
func TestPlanFiresMatchesOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 1))
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	policies := []string{codecs.MisfireFireOnce, codecs.MisfireSkip, codecs.MisfireFireAll}
	for i := range 2000 {
		var spec schedule.Spec
		if rng.IntN(2) == 0 {
			spec.Every = time.Duration(1+rng.IntN(120)) * time.Second
		} else {
			spec.Cron = fmt.Sprintf("*/%d * * * * *", 1+rng.IntN(30))
		}
		if rng.IntN(4) == 0 {
			spec.End = base.Add(time.Duration(rng.IntN(20000)) * time.Second)
		}
		s, err := schedule.Parse(spec)
		require.NoError(t, err)
		due := s.Next(base.Add(time.Duration(rng.IntN(3600)) * time.Second))
		if due.IsZero() {
			continue
		}
		now := due.Add(time.Duration(rng.IntN(4*3600)) * time.Second)
		grace := time.Duration(rng.IntN(5*3600)) * time.Second
		policy := policies[rng.IntN(len(policies))]
		catchUp := 1 + rng.IntN(50)
		name := fmt.Sprintf("case %d: %+v due %s t %s grace %s %s catch-up %d", i, spec, due, now, grace, policy, catchUp)

		wantFires, wantMissed, wantNext := oraclePlan(s, due, now, grace, policy, catchUp)
		uncut, uncutNext := wantFires, wantNext
		if len(wantFires) > maxFires { // one plan stops at maxFires
			uncut, uncutNext = wantFires[:maxFires], wantFires[maxFires].At
		}
		p := planFires(s, due, now, grace, policy, catchUp, maxFires, nil)
		require.Equal(t, wantMissed, p.Missed, name)
		require.Equal(t, len(uncut), len(p.Fires), name)
		if len(uncut) > 0 {
			require.Equal(t, uncut, p.Fires, name)
		}
		require.True(t, uncutNext.Equal(p.Next), "%s: next %s, want %s", name, p.Next, uncutNext)

		limit := 1 + rng.IntN(20)
		var pieces []Fire
		at := due
		for range 10000 {
			p := planFires(s, at, now, grace, policy, catchUp, limit, nil)
			require.LessOrEqual(t, len(p.Fires), limit, name)
			pieces = append(pieces, p.Fires...)
			if p.Next.IsZero() || p.Next.After(now) {
				require.True(t, wantNext.Equal(p.Next), "%s: cut next %s, want %s", name, p.Next, wantNext)
				break
			}
			require.NotEmpty(t, p.Fires, "%s: a cut plan dispatches something", name)
			require.True(t, p.Next.After(at), name)
			at = p.Next
		}
		require.Equal(t, len(wantFires), len(pieces), name)
		if len(wantFires) > 0 {
			require.Equal(t, wantFires, pieces, "%s: limit %d", name, limit)
		}
	}
}

// TestPlanFiresEveryCountsInClosedForm: a job firing every second after a
// month of downtime counts every missed fire exactly, in a handful of steps.
func TestPlanFiresEveryCountsInClosedForm(t *testing.T) {
	t.Parallel()
	s, err := schedule.Parse(schedule.Spec{Every: time.Second})
	require.NoError(t, err)
	due := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	now := due.Add(30 * 24 * time.Hour)
	for _, policy := range []string{codecs.MisfireFireOnce, codecs.MisfireSkip, codecs.MisfireFireAll} {
		p := planFires(s, due, now, 5*time.Second, policy, 100, maxFires, nil)
		late := int64(30*24*3600 - 5) // fires before now-5s
		switch policy {
		case codecs.MisfireFireAll:
			require.Equal(t, late-100, p.Missed, policy)
			require.Len(t, p.Fires, 106, policy)
		case codecs.MisfireSkip:
			require.Equal(t, late, p.Missed, policy)
			require.Len(t, p.Fires, 6, policy)
		default:
			require.Equal(t, late-1, p.Missed, policy)
			require.Len(t, p.Fires, 7, policy)
		}
		require.Less(t, p.Steps, 120, policy)
		require.True(t, p.Next.Equal(now.Add(time.Second)), policy)
	}
}

func BenchmarkPlanFiresMonthLate(b *testing.B) {
	due := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	now := due.Add(30 * 24 * time.Hour)
	for _, spec := range []schedule.Spec{{Every: time.Second}, {Cron: "* * * * * *"}} {
		s, err := schedule.Parse(spec)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("every=%s,cron=%q", spec.Every, spec.Cron), func(b *testing.B) {
			b.ReportAllocs()
			var buf []Fire
			for b.Loop() {
				buf = planFires(s, due, now, 5*time.Second, codecs.MisfireFireOnce, 100, maxFires, buf).Fires
			}
		})
	}
}
