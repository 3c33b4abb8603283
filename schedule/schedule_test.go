package schedule

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func mustParse(t testing.TB, s Spec) Schedule {
	t.Helper()
	sch, err := Parse(s)
	require.NoError(t, err)
	return sch
}

// nexts returns n consecutive fire times after from, in UTC RFC 3339.
func nexts(s Schedule, from time.Time, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		from = s.Next(from)
		if from.IsZero() {
			out = append(out, "zero")
			break
		}
		out = append(out, from.UTC().Format(time.RFC3339Nano))
	}
	return out
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T12:00:00Z")
	tests := []struct {
		name   string
		spec   Spec
		field  string
		reason string // substring
	}{
		{"nothing", Spec{}, "schedule", "exactly one of cron, every, at"},
		{"cron and every", Spec{Cron: "* * * * *", Every: time.Minute}, "schedule", "got 2"},
		{"every and at", Spec{Every: time.Minute, At: at}, "schedule", "got 2"},
		{"all three", Spec{Cron: "@daily", Every: time.Minute, At: at}, "schedule", "got 3"},
		{"only tz", Spec{TZ: "Europe/Berlin"}, "schedule", "got 0"},
		{"every too small", Spec{Every: 999 * time.Millisecond}, "every", "at least 1s"},
		{"every negative", Spec{Every: -time.Hour}, "every", "at least 1s"},
		{"cron 3 fields", Spec{Cron: "* * *"}, "cron", "expected 5 or 6 fields, got 3"},
		{"cron 7 fields", Spec{Cron: "0 0 0 1 1 * 2026"}, "cron", "expected 5 or 6 fields, got 7"},
		{"cron blank", Spec{Cron: "   "}, "cron", "expected 5 or 6 fields, got 0"},
		{"cron minute range", Spec{Cron: "60 * * * *"}, "cron", "above maximum"},
		{"cron hour range", Spec{Cron: "0 24 * * *"}, "cron", "above maximum"},
		{"cron dom zero", Spec{Cron: "0 0 0 * *"}, "cron", "below minimum"},
		{"cron dow 7", Spec{Cron: "0 0 * * 7"}, "cron", "above maximum"},
		{"cron garbage", Spec{Cron: "a b c d e"}, "cron", "failed to parse"},
		{"cron step zero", Spec{Cron: "*/0 * * * *"}, "cron", "positive"},
		{"cron every", Spec{Cron: "@every 5m"}, "cron", "use the every field"},
		{"cron unknown descriptor", Spec{Cron: "@fortnightly"}, "cron", "unknown descriptor"},
		{"cron upper-case descriptor", Spec{Cron: "@DAILY"}, "cron", "unknown descriptor"},
		{"cron TZ prefix", Spec{Cron: "TZ=UTC 0 * * * *"}, "cron", "use the tz field"},
		{"cron CRON_TZ prefix", Spec{Cron: "CRON_TZ=Europe/Berlin 0 * * *"}, "cron", "use the tz field"},
		{"cron TZ prefix no space", Spec{Cron: "TZ=x"}, "cron", "expected 5 or 6 fields"},
		{"tz unknown", Spec{Cron: "@daily", TZ: "Mars/Olympus_Mons"}, "tz", "unknown time zone"},
		{"tz local", Spec{Cron: "@daily", TZ: "Local"}, "tz", "Local"},
		{"tz unknown on every", Spec{Every: time.Minute, TZ: "Nope"}, "tz", "unknown time zone"},
		{"end before start", Spec{Every: time.Minute, Start: at, End: at.Add(-time.Second)}, "end", "before start"},
		{"at before start", Spec{At: at, Start: at.Add(time.Second)}, "at", "outside start/end"},
		{"at after end", Spec{At: at, End: at.Add(-time.Nanosecond)}, "at", "outside start/end"},
		{"start year out of range", Spec{Every: time.Minute, Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "start", "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec)
			require.Error(t, err)
			require.Nil(t, s)
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %T", err)
			require.Equal(t, tc.field, e.Field)
			require.Contains(t, e.Reason, tc.reason)
			require.Equal(t, "schedule: "+e.Field+": "+e.Reason, err.Error())
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	_, err := Parse(Spec{Cron: "* * *"})
	require.EqualError(t, err, "schedule: cron: expected 5 or 6 fields, got 3")
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T12:00:00Z")
	for _, s := range []Spec{
		{Cron: "*/5 * * * *"},
		{Cron: "  0 9 * * 1-5  ", TZ: "Europe/Berlin"},
		{Cron: "0 0 9 * * MON-FRI"},
		{Cron: "0 0 1 jan,jul ?"},
		{Cron: "@hourly", TZ: "UTC"},
		{Every: time.Second},
		{Every: time.Hour, TZ: "Asia/Tokyo"},
		{At: at},
		{At: at, Start: at, End: at},
		{Cron: "@daily", Start: at, End: at},
	} {
		_, err := Parse(s)
		require.NoError(t, err, "%+v", s)
	}
}

func TestCron(t *testing.T) {
	t.Parallel()
	from := utc("2026-05-01T10:07:30.5Z") // a Friday
	tests := []struct {
		cron string
		tz   string
		from time.Time
		want []string
	}{
		{"*/5 * * * *", "", from, []string{"2026-05-01T10:10:00Z", "2026-05-01T10:15:00Z", "2026-05-01T10:20:00Z"}},
		{"*/20 * * * * *", "", from, []string{"2026-05-01T10:07:40Z", "2026-05-01T10:08:00Z", "2026-05-01T10:08:20Z"}},
		{"30 7 10 * * *", "", from, []string{"2026-05-02T10:07:30Z", "2026-05-03T10:07:30Z"}},
		{"* * * * * *", "", from, []string{"2026-05-01T10:07:31Z", "2026-05-01T10:07:32Z"}},
		{"0 9 * * 1-5", "Europe/Berlin", from, []string{"2026-05-04T07:00:00Z", "2026-05-05T07:00:00Z"}},
		{"0 9 * * 1-5", "America/New_York", utc("2026-01-09T12:00:00Z"), []string{"2026-01-09T14:00:00Z", "2026-01-12T14:00:00Z"}},
		// dom and dow both restricted: either matches (robfig / Vixie rule).
		{"0 0 13 * 5", "", utc("2026-02-01T00:00:00Z"), []string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z"}},
		// dom with dow "*": both must match.
		{"0 0 31 * *", "", utc("2026-01-31T00:00:00Z"), []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"}},
		{"0 0 29 2 *", "", utc("2026-01-01T00:00:00Z"), []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 29 2 *", "", utc("2097-01-01T00:00:00Z"), []string{"2104-02-29T00:00:00Z"}},
		{"0 0 30 2 *", "", from, []string{"zero"}},
		{"@yearly", "", from, []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "Asia/Tokyo", from, []string{"2026-12-31T15:00:00Z"}},
		{"@monthly", "", from, []string{"2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z"}},
		{"@weekly", "", from, []string{"2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z"}},
		{"@daily", "", from, []string{"2026-05-02T00:00:00Z"}},
		{"@midnight", "Asia/Kolkata", from, []string{"2026-05-01T18:30:00Z"}},
		{"@hourly", "", from, []string{"2026-05-01T11:00:00Z", "2026-05-01T12:00:00Z"}},
		// Exactly on a fire time: strictly after.
		{"0 * * * *", "", utc("2026-05-01T10:00:00Z"), []string{"2026-05-01T11:00:00Z"}},
		{"0 * * * *", "", utc("2026-05-01T09:59:59.999999999Z"), []string{"2026-05-01T10:00:00Z"}},
		// Before 1970 and far future.
		{"0 12 * * *", "", utc("1969-12-31T13:00:00Z"), []string{"1970-01-01T12:00:00Z"}},
		{"0 0 1 1 *", "", utc("9998-06-01T00:00:00Z"), []string{"9999-01-01T00:00:00Z", "10000-01-01T00:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.cron+"/"+tc.tz, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, Spec{Cron: tc.cron, TZ: tc.tz})
			require.Equal(t, tc.want, nexts(s, tc.from, len(tc.want)))
		})
	}
}

func TestNextLocation(t *testing.T) {
	t.Parallel()
	s := mustParse(t, Spec{Cron: "@daily", TZ: "Europe/Berlin"})
	n := s.Next(utc("2026-05-01T12:00:00Z"))
	require.Equal(t, "Europe/Berlin", n.Location().String())
	require.Equal(t, "2026-05-02T00:00:00+02:00", n.Format(time.RFC3339))
	e := mustParse(t, Spec{Every: time.Minute})
	require.Equal(t, time.UTC, e.Next(time.Now()).Location())
}

func TestEvery(t *testing.T) {
	t.Parallel()
	start := utc("2026-05-01T10:00:00.25Z")
	tests := []struct {
		name string
		spec Spec
		from time.Time
		want []string
	}{
		{"epoch aligned minute", Spec{Every: time.Minute}, utc("2026-05-01T10:07:30.5Z"), []string{"2026-05-01T10:08:00Z", "2026-05-01T10:09:00Z"}},
		{"epoch aligned on boundary", Spec{Every: time.Minute}, utc("2026-05-01T10:07:00Z"), []string{"2026-05-01T10:08:00Z"}},
		{"epoch aligned 7s", Spec{Every: 7 * time.Second}, utc("1970-01-01T00:00:00Z"), []string{"1970-01-01T00:00:07Z", "1970-01-01T00:00:14Z"}},
		{"before epoch", Spec{Every: 7 * time.Second}, utc("1969-12-31T23:59:50Z"), []string{"1969-12-31T23:59:53Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:07Z"}},
		{"odd period", Spec{Every: 90*time.Minute + 1}, utc("1970-01-01T01:30:00Z"), []string{"1970-01-01T01:30:00.000000001Z", "1970-01-01T03:00:00.000000002Z"}},
		{"start aligned, before start", Spec{Every: time.Hour, Start: start}, utc("2020-01-01T00:00:00Z"), []string{"2026-05-01T10:00:00.25Z", "2026-05-01T11:00:00.25Z"}},
		{"start aligned, exactly start", Spec{Every: time.Hour, Start: start}, start, []string{"2026-05-01T11:00:00.25Z"}},
		{"start aligned, after start", Spec{Every: time.Hour, Start: start}, utc("2026-05-03T07:30:00Z"), []string{"2026-05-03T08:00:00.25Z"}},
		{"end inclusive", Spec{Every: time.Hour, Start: start, End: start.Add(2 * time.Hour)}, start, []string{"2026-05-01T11:00:00.25Z", "2026-05-01T12:00:00.25Z", "zero"}},
		{"far future", Spec{Every: 24 * time.Hour}, utc("3000-03-01T12:00:00Z"), []string{"3000-03-02T00:00:00Z"}},
		{"far past", Spec{Every: 24 * time.Hour}, utc("1000-03-01T12:00:00Z"), []string{"1000-03-02T00:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, tc.spec)
			require.Equal(t, tc.want, nexts(s, tc.from, len(tc.want)))
		})
	}
}

func TestEveryMatchesLoop(t *testing.T) {
	t.Parallel()
	// Compare the O(1) arithmetic with a naive walk from the origin.
	origin := utc("2026-01-01T00:00:00.123456789Z")
	for _, p := range []time.Duration{time.Second, 1001 * time.Millisecond, 13*time.Second + 7, time.Hour} {
		s := mustParse(t, Spec{Every: p, Start: origin})
		fire := origin
		for i := 0; i < 500; i++ {
			// Any t in [fire-p, fire) must give fire.
			for _, d := range []time.Duration{-p, -p + 1, -1, -p / 2} {
				require.Equal(t, fire, s.Next(fire.Add(d)), "p=%s i=%d d=%s", p, i, d)
			}
			fire = fire.Add(p)
		}
	}
}

func TestAt(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T12:00:00.5Z")
	s := mustParse(t, Spec{At: at, Start: at.Add(-time.Hour), End: at})
	require.Equal(t, at, s.Next(utc("2000-01-01T00:00:00Z")))
	require.Equal(t, at, s.Next(at.Add(-1)))
	require.True(t, s.Next(at).IsZero())
	require.True(t, s.Next(at.Add(time.Hour)).IsZero())
}

func TestCronBounds(t *testing.T) {
	t.Parallel()
	start := utc("2026-05-01T10:00:00Z")
	end := utc("2026-05-01T10:15:00Z")
	s := mustParse(t, Spec{Cron: "*/5 * * * *", Start: start, End: end})
	// Start itself is a fire time and is returned for t < Start.
	require.Equal(t, []string{"2026-05-01T10:00:00Z", "2026-05-01T10:05:00Z", "2026-05-01T10:10:00Z", "2026-05-01T10:15:00Z", "zero"},
		nexts(s, utc("2020-01-01T00:00:00Z"), 5))
	require.True(t, s.Next(end).IsZero())
	require.True(t, s.Next(end.Add(time.Hour)).IsZero())

	// A fractional Start: first fire is the first whole matching second >= Start.
	s = mustParse(t, Spec{Cron: "* * * * * *", Start: utc("2026-05-01T10:00:00.5Z")})
	require.Equal(t, []string{"2026-05-01T10:00:01Z"}, nexts(s, time.Time{}, 1))
}

func TestNextIsAllocationFree(t *testing.T) {
	at := utc("2026-05-01T12:00:00Z")
	for _, spec := range []Spec{
		{Cron: "*/5 * * * *"},
		{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"},
		{Cron: "30 2 * * *", TZ: "America/New_York"},
		{Cron: "0 0 30 2 *"},
		{Every: time.Minute, Start: at},
		{At: at},
		{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", Also: []Spec{{Every: 7 * time.Minute}, {Cron: "30 2 * * *", TZ: "America/New_York"}},
			Exclude: Exclusions{TZ: "America/Santiago", Dates: []Date{{2026, 3, 8}, {2026, 5, 1}}, Ranges: []Range{{From: at, To: at.Add(time.Hour)}}}},
	} {
		s := mustParse(t, spec)
		from := utc("2026-03-08T06:00:00Z")
		allocs := testing.AllocsPerRun(200, func() { from = s.Next(from).Add(-time.Minute) })
		require.Zero(t, allocs, "%+v", spec)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	c := NewCache(2)
	a, err := c.Get(Spec{Cron: "@daily"})
	require.NoError(t, err)
	b, err := c.Get(Spec{Cron: "@daily"})
	require.NoError(t, err)
	require.Same(t, a, b)
	_, err = c.Get(Spec{Cron: "@daily", TZ: "Europe/Berlin"})
	require.NoError(t, err)
	require.Equal(t, 2, c.Len())

	_, err = c.Get(Spec{Cron: "bad"})
	require.Error(t, err)
	require.Equal(t, 2, c.Len(), "errors are not cached")

	_, err = c.Get(Spec{Every: time.Minute}) // full: drops everything
	require.NoError(t, err)
	require.Equal(t, 1, c.Len())

	off := NewCache(0)
	_, err = off.Get(Spec{Every: time.Minute})
	require.NoError(t, err)
	require.Zero(t, off.Len())
}

func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCache(8)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s, err := c.Get(Spec{Cron: fmt.Sprintf("%d * * * *", (g*7+i)%60)})
				require.NoError(t, err)
				require.False(t, s.Next(time.Now()).IsZero())
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, c.Len(), 8)
}
