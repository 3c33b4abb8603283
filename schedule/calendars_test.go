package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type staticCalendars map[string][]Date

func (s staticCalendars) HasDate(name string, d Date) bool { return slices.Contains(s[name], d) }

// TestWithCalendarsOracle: a schedule filtered by named calendars gives
// exactly the brute-force filter of its times by their local dates, over
// seeded sets in DST zones; with a scheduled mapping (a delayed schedule)
// the date of the mapped time counts; an unknown calendar or a nil source
// excludes nothing.
func TestWithCalendarsOracle(t *testing.T) {
	t.Parallel()
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 3))
		from := time.Date(2026, time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		s := randomSpec(r, from)
		s.Also = []Spec{randomSpec(r, from)}
		tz := setZones[r.IntN(len(setZones))]
		loc, err := loadLocation(tz)
		require.NoError(t, err)
		cals := staticCalendars{}
		for range r.IntN(20) {
			name := []string{"a", "b"}[r.IntN(2)]
			cals[name] = append(cals[name], DateOf(from.AddDate(0, 0, r.IntN(40))))
		}
		x := Exclusions{TZ: tz, Calendars: []string{"a", "b", "unknown"}}
		inner := mustParse(t, s)
		to := from.AddDate(0, 0, 40)
		var shift func(time.Time) time.Time
		if r.IntN(2) == 0 {
			shift = func(at time.Time) time.Time { return at.Add(-90 * time.Minute) } // "scheduled" 90 minutes earlier
		}
		var want []time.Time
		for _, at := range walk(inner, from, to) {
			d := at
			if shift != nil {
				d = shift(at)
			}
			if !cals.HasDate("a", DateOf(d.In(loc))) && !cals.HasDate("b", DateOf(d.In(loc))) {
				want = append(want, at)
			}
		}
		sameTimes(t, want, walk(WithCalendars(inner, x, cals, shift), from, to), "calendars")
		// Up to a horizon: the same times up to it; after it, the inner
		// schedule's next time, not looked up (decided when it is due).
		horizon := from.Add(time.Duration(r.Int64N(int64(40 * 24 * time.Hour))))
		upTo := WithCalendarsUpTo(inner, x, cals, shift, horizon)
		var before []time.Time
		for _, at := range want {
			if at.Before(horizon) {
				before = append(before, at)
			}
		}
		sameTimes(t, before, walk(upTo, from, horizon), "calendars up to the horizon")
		if n := upTo.Next(horizon); !n.Equal(inner.Next(horizon)) {
			t.Fatalf("seed %d: after the horizon Next is %s, want the inner schedule's %s", seed, n, inner.Next(horizon))
		}
		require.Same(t, inner, WithCalendars(inner, x, nil, shift))
		require.Same(t, inner, WithCalendars(inner, Exclusions{TZ: tz}, cals, shift))
	}
}
