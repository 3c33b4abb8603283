//go:build adversary14c

// Adversary 14c: the cost of named calendars as an instance reads them
// (views.Calendars on the embedded broker). Run:
//
//	go test -tags adversary14c -count=1 -run Adversary14c ./processors/
package processors_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/testenv"
)

func adv14cSetCalendar(t *testing.T, env *testenv.Env, has func(string, schedule.Date) bool, at time.Time, name string, dates ...string) {
	env.Produce(string(env.Layout.Calendars()), name, codecs.EncodeCalendarDef(codecs.CalendarDef{Dates: dates}), at)
	last, err := schedule.ParseDate(dates[len(dates)-1])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return has(name, last) }, time.Minute, 10*time.Millisecond)
}

// TestAdversary14cCalendarLookupCost: the scheduler asks the calendars
// view (views.Calendars.HasDate) once per excluded day it passes, and a
// job due on a calendar date is due again every second (the index keeps
// the calendar-free schedule). HasDate compares the calendar's whole
// stored value with the one it parsed, under one mutex for every shard,
// at each call: with a calendar of 5000 dates (the most) each lookup
// reads ~70 KB. Figures: lookups per second one such job costs (5001, see
// processors/scheduler TestAdversary14cCalendarJobDueEverySecond) times
// the measured cost of one lookup. Asserted: one job's decision per
// second of shard time stays under 1 ms.
func TestAdversary14cCalendarLookupCost(t *testing.T) {
	env := testenv.New(t, 1)
	inst := env.Start(env.Config())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var dates []string
	for i := range 5000 {
		dates = append(dates, t0.AddDate(0, 0, i).Format(time.DateOnly))
	}
	adv14cSetCalendar(t, env, inst.Calendars().HasDate, t0, "hol", dates...)
	cals := inst.Calendars()
	day := schedule.DateOf(t0.AddDate(0, 0, 100))
	res := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			if !cals.HasDate("hol", day) {
				b.Fatal("date not held")
			}
		}
	})
	per := time.Duration(res.NsPerOp())
	perDecision := per * 5001
	t.Logf("HasDate on a 5000-date calendar: %s/op, %d allocs/op; one job due on it costs %s per second of shard time", per, res.AllocsPerOp(), perDecision)
	if perDecision > time.Millisecond {
		t.Fatalf("one job excluded by a 5000-date calendar costs %s of calendar lookups per second of shard time (%s per lookup x 5001): 1000 such jobs need %s per second", perDecision, per, 1000*perDecision)
	}
}
