package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	setZones = []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham"}
	setCrons = []string{"0 * * * *", "30 2 * * *", "0 0 * * *", "*/20 * * * *", "0 9 * * 1-5", "15 1,2,3 * * *", "0 0 L * *", "0 12 * * 5#2", "45 23 * * 0", "0 0 29 2 *"}
)

// randomSpec draws a member schedule (no bounds, no members).
func randomSpec(r *rand.Rand, from time.Time) Spec {
	s := Spec{TZ: setZones[r.IntN(len(setZones))]}
	switch r.IntN(5) {
	case 0:
		s.Every = time.Duration(1+r.IntN(7*24)) * 17 * time.Minute
	case 1:
		s.At = from.Add(time.Duration(r.Int64N(int64(60 * 24 * time.Hour)))).Truncate(time.Second)
	default:
		s.Cron = setCrons[r.IntN(len(setCrons))]
		s.DST = DST{Gap: []string{"", GapSkip}[r.IntN(2)], Overlap: []string{"", OverlapLast, OverlapBoth}[r.IntN(3)]}
	}
	return s
}

// randomExclusions draws dates and ranges around [from, from+days).
func randomExclusions(r *rand.Rand, from time.Time, days int) Exclusions {
	x := Exclusions{TZ: setZones[r.IntN(len(setZones))]}
	for range r.IntN(12) {
		x.Dates = append(x.Dates, DateOf(from.AddDate(0, 0, r.IntN(days+2)-1)))
	}
	for range r.IntN(5) {
		a := from.Add(time.Duration(r.Int64N(int64(days) * int64(24*time.Hour))))
		x.Ranges = append(x.Ranges, Range{From: a, To: a.Add(time.Duration(1 + r.Int64N(int64(72*time.Hour))))})
	}
	return x
}

// bruteSet is the oracle: each member's times in [from, to) walked alone,
// merged, deduplicated, and filtered by testing every time against every
// exclusion directly.
func bruteSet(t *testing.T, s Spec, from, to time.Time) []time.Time {
	t.Helper()
	var all []time.Time
	for _, m := range append([]Spec{{Cron: s.Cron, Every: s.Every, At: s.At, TZ: s.TZ, DST: s.DST}}, s.Also...) {
		m.Start, m.End = s.Start, s.End
		ms := mustParse(t, m)
		for at := ms.Next(from.Add(-1)); !at.IsZero() && at.Before(to); at = ms.Next(at) {
			all = append(all, at)
		}
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	all = slices.CompactFunc(all, func(a, b time.Time) bool { return a.Equal(b) })
	loc, err := loadLocation(s.Exclude.TZ)
	require.NoError(t, err)
	return slices.DeleteFunc(all, func(at time.Time) bool {
		for _, r := range s.Exclude.Ranges {
			if !at.Before(r.From) && at.Before(r.To) {
				return true
			}
		}
		return slices.Contains(s.Exclude.Dates, DateOf(at.In(loc)))
	})
}

// sameTimes fails at the first difference between two lists of times
// (a diff of thousands of times is unreadable and slow).
func sameTimes(t *testing.T, want, got []time.Time, name string) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if !want[i].Equal(got[i]) {
			t.Fatalf("%s: time %d is %v, the oracle's %v", name, i, got[i].UTC(), want[i].UTC())
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d times, the oracle's %d", name, len(got), len(want))
	}
}

func walk(s Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for at := s.Next(from.Add(-1)); !at.IsZero() && at.Before(to); at = s.Next(at) {
		out = append(out, at)
	}
	return out
}

// TestSetOracle checks the union of several specs, with and without
// exclusions, against the brute-force merge and filter, over seeded random
// sets across DST changes in six zones; and Last and NextN on them.
func TestSetOracle(t *testing.T) {
	t.Parallel()
	n := 300
	if testing.Short() {
		n = 60
	}
	for seed := range uint64(n) {
		setCase(t, seed)
	}
}

// setCase draws the set of seed and checks it against the oracle.
func setCase(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 14))
	from := time.Date(2026+r.IntN(4), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	days := 10 + r.IntN(60)
	to := from.AddDate(0, 0, days)
	s := randomSpec(r, from)
	for range r.IntN(4) {
		s.Also = append(s.Also, randomSpec(r, from))
	}
	if r.IntN(3) > 0 {
		s.Exclude = randomExclusions(r, from, days)
	}
	if r.IntN(4) == 0 {
		s.Start = from.Add(time.Duration(r.Int64N(int64(48 * time.Hour))))
		s.End = to.Add(-time.Duration(r.Int64N(int64(48 * time.Hour))))
	}
	if !s.At.IsZero() && ((!s.Start.IsZero() && s.At.Before(s.Start)) || (!s.End.IsZero() && s.At.After(s.End))) {
		s.At = time.Time{}
		s.Every = time.Hour
	}
	s.Also = slices.DeleteFunc(s.Also, func(m Spec) bool {
		return !m.At.IsZero() && ((!s.Start.IsZero() && m.At.Before(s.Start)) || (!s.End.IsZero() && m.At.After(s.End)))
	})
	name := fmt.Sprintf("seed %d: %+v", seed, s)
	sch, err := Parse(s)
	require.NoError(t, err, name)
	want := bruteSet(t, s, from, to)
	sameTimes(t, want, walk(sch, from, to), name)
	sameTimes(t, want, walk(mustParse(t, s), from, to), name+" (parsed twice)")
	if len(want) > 0 {
		mid := from.Add(to.Sub(from) / 2)
		i, _ := slices.BinarySearchFunc(want, mid, func(a, b time.Time) int { return a.Compare(b) })
		var last time.Time
		if j := min(i, len(want)) - 1; j >= 0 {
			if want[j].Equal(mid) || want[j].Before(mid) {
				last = want[j]
			}
		}
		if i < len(want) && want[i].Equal(mid) {
			last = want[i]
		}
		require.True(t, last.Equal(Last(sch, from.Add(-1), mid)), "%s: Last up to %v", name, mid)
		sameTimes(t, want[:min(5, len(want))], NextN(sch, from.Add(-1), min(5, len(want))), name+" (NextN)")
	}
}

// TestSetEqualInstantsFireOnce: two members due at the same instant fire
// once, whatever their zones.
func TestSetEqualInstantsFireOnce(t *testing.T) {
	t.Parallel()
	s := mustParse(t, Spec{Cron: "0 9 * * *", TZ: "Europe/Berlin", Also: []Spec{{Cron: "0 8 * * *", TZ: "Europe/London"}, {Every: time.Hour}}})
	from := utc("2026-03-01T00:00:00Z")
	got := walk(s, from, from.Add(48*time.Hour))
	require.Len(t, got, 48) // the hourly member covers the daily ones
	for i := 1; i < len(got); i++ {
		require.True(t, got[i].After(got[i-1]))
	}
}

// TestExcludeDayAcrossDST: an excluded date in a zone whose day is 23 or
// 25 hours long, or whose midnight does not exist (Santiago), excludes
// exactly the instants whose local date it is.
func TestExcludeDayAcrossDST(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tz   string
		date string
	}{
		{"Europe/Berlin", "2026-03-29"},
		{"Europe/Berlin", "2026-10-25"},
		{"America/Santiago", "2026-09-06"},
		{"America/Santiago", "2026-04-05"},
		{"Australia/Lord_Howe", "2026-10-04"},
		{"Australia/Lord_Howe", "2026-04-05"},
	} {
		d, err := ParseDate(c.date)
		require.NoError(t, err)
		loc, err := loadLocation(c.tz)
		require.NoError(t, err)
		s := Spec{Every: time.Minute, Exclude: Exclusions{TZ: c.tz, Dates: []Date{d}}}
		from := time.Date(d.Year, d.Month, d.Day-2, 0, 0, 0, 0, loc)
		to := from.Add(5 * 24 * time.Hour)
		got := walk(mustParse(t, s), from, to)
		sameTimes(t, bruteSet(t, s, from, to), got, c.tz+" "+c.date)
		for _, at := range got {
			require.NotEqual(t, d, DateOf(at.In(loc)))
		}
	}
}

func TestSetErrors(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T12:00:00Z")
	many := make([]Spec, MaxSpecs)
	for i := range many {
		many[i] = Spec{Every: time.Hour}
	}
	tests := []struct {
		spec  Spec
		field string
	}{
		{Spec{Every: time.Hour, Also: many}, "schedules"},
		{Spec{Every: time.Hour, Also: []Spec{{Cron: "61 * * * *"}}}, "schedules[1].cron"},
		{Spec{Every: time.Hour, Also: []Spec{{Every: time.Hour}, {}}}, "schedules[2].schedule"},
		{Spec{Every: time.Hour, Also: []Spec{{Every: time.Hour, Start: at}}}, "schedules[1].schedule"},
		{Spec{Every: time.Hour, Also: []Spec{{Every: time.Hour, Also: []Spec{{Every: time.Hour}}}}}, "schedules[1].schedule"},
		{Spec{Every: time.Hour, Also: []Spec{{At: at}}, End: at.Add(-1)}, "schedules[1].at"},
		{Spec{Every: time.Hour, Exclude: Exclusions{TZ: "Nope/Nope"}}, "tz"},
		{Spec{Every: time.Hour, Exclude: Exclusions{Dates: []Date{{2026, 2, 30}}}}, "exclude.dates[0]"},
		{Spec{Every: time.Hour, Exclude: Exclusions{Dates: make([]Date, MaxExcludeDates+1)}}, "exclude.dates"},
		{Spec{Every: time.Hour, Exclude: Exclusions{Ranges: make([]Range, MaxExcludeRanges+1)}}, "exclude.ranges"},
		{Spec{Every: time.Hour, Exclude: Exclusions{Ranges: []Range{{From: at, To: at}}}}, "exclude.ranges[0]"},
		{Spec{Every: time.Hour, Exclude: Exclusions{Ranges: []Range{{From: at}}}}, "exclude.ranges[0]"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.spec)
		var e *Error
		require.ErrorAs(t, err, &e, "%+v", tt.spec)
		require.Equal(t, tt.field, e.Field, "%v", err)
	}
	for _, bad := range []string{"2026-2-3", "2026-02-30", "0000-01-01", "2026-02-03T00:00:00Z", ""} {
		_, err := ParseDate(bad)
		require.Error(t, err, bad)
	}
}

// TestCacheKeysSets: specs that differ only in members or exclusions get
// their own cache entries.
func TestCacheKeysSets(t *testing.T) {
	t.Parallel()
	c := NewCache(100)
	from := utc("2026-12-24T00:00:00Z")
	d, _ := ParseDate("2026-12-25")
	specs := []Spec{
		{Cron: "0 0 * * *"},
		{Cron: "0 0 * * *", Also: []Spec{{Cron: "0 12 * * *"}}},
		{Cron: "0 0 * * *", Also: []Spec{{Cron: "0 13 * * *"}}},
		{Cron: "0 0 * * *", Exclude: Exclusions{Dates: []Date{d}}},
		{Cron: "0 0 * * *", Exclude: Exclusions{Dates: []Date{d}, TZ: "Pacific/Chatham"}},
	}
	for _, s := range specs {
		got, err := c.Get(s)
		require.NoError(t, err)
		require.Equal(t, walk(mustParse(t, s), from, from.AddDate(0, 0, 3)), walk(got, from, from.AddDate(0, 0, 3)), "%+v", s)
	}
	require.Equal(t, len(specs), c.Len())
}
