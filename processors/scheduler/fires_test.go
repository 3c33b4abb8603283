package scheduler

import (
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
			p := planFires(tc.sched, tc.due, tc.t, tc.grace, tc.policy, 100, nil)
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
	p := planFires(s, due, due.Add(time.Hour), 0, codecs.MisfireFireAll, 10, nil)
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
	p := planFires(s, due, now, 5*time.Second, codecs.MisfireFireOnce, 100, nil)
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
	p := planFires(s, due, now, 7*24*time.Hour, codecs.MisfireFireOnce, 100, nil)
	require.Len(t, p.Fires, maxFires)
	require.Equal(t, due, p.Fires[0].At)
	require.Equal(t, due.Add(maxFires*time.Second), p.Next, "the job stays due at its first undispatched fire")
	require.Zero(t, p.Missed)
}
