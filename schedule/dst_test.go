package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

// TestDST pins the DST rules on real 2026 transitions:
//   - America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z),
//     2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
//   - Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z),
//     2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
func TestDST(t *testing.T) {
	t.Parallel()
	const ny, berlin = "America/New_York", "Europe/Berlin"
	tests := []struct {
		name string
		cron string
		tz   string
		from string
		want []string
	}{
		// Daily 02:30 falls in the gap: fires once at 03:00 EDT.
		{"ny gap daily", "30 2 * * *", ny, "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		// Repeated 01:30: fires once, at the EDT (first) occurrence.
		{"ny repeated daily", "30 1 * * *", ny, "2026-10-31T00:00:00Z",
			[]string{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Asking from inside the second pass (01:15 EST) does not fire 01:30 EST.
		{"ny repeated daily from second pass", "30 1 * * *", ny, "2026-11-01T06:15:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		// 02:00 and 02:30 collapse into 03:00 EDT, which is also a match: one fire.
		{"ny */30 spring", "*/30 * * * *", ny, "2026-03-08T05:45:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		// The second pass of 01:00-02:00 does not fire.
		{"ny */30 fall", "*/30 * * * *", ny, "2026-11-01T04:45:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
		{"ny */30 fall from second pass", "*/30 * * * *", ny, "2026-11-01T06:00:00Z",
			[]string{"2026-11-01T07:00:00Z"}},
		{"ny hourly spring", "0 * * * *", ny, "2026-03-08T05:30:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"ny hourly fall", "0 * * * *", ny, "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{"ny every second spring", "* * * * * *", ny, "2026-03-08T06:59:58Z",
			[]string{"2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z", "2026-03-08T07:00:01Z"}},
		{"ny every second fall", "* * * * * *", ny, "2026-11-01T05:59:58.5Z",
			[]string{"2026-11-01T05:59:59Z", "2026-11-01T07:00:00Z", "2026-11-01T07:00:01Z"}},
		{"ny every second from second pass", "* * * * * *", ny, "2026-11-01T06:30:00.25Z",
			[]string{"2026-11-01T07:00:00Z", "2026-11-01T07:00:01Z"}},

		{"berlin gap daily", "30 2 * * *", berlin, "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"berlin repeated daily", "30 2 * * *", berlin, "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"berlin 01:30 unaffected", "30 1 * * *", berlin, "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T23:30:00Z", "2026-10-26T00:30:00Z"}},
		{"berlin */30 spring", "*/30 * * * *", berlin, "2026-03-29T00:15:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}},
		{"berlin */30 fall", "*/30 * * * *", berlin, "2026-10-24T23:45:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}},
		{"berlin hourly spring", "0 * * * *", berlin, "2026-03-28T23:30:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"berlin hourly fall", "0 * * * *", berlin, "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},

		// Midnight does not exist on 2018-11-04 in Sao Paulo (00:00 -03 -> 01:00 -02).
		{"sao paulo midnight gap", "@daily", "America/Sao_Paulo", "2018-11-03T12:00:00Z",
			[]string{"2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"}},
		// Samoa skipped all of 2011-12-30 (2011-12-29 24:00 -10 -> 2011-12-31 00:00 +14):
		// noon of the missing day fires at 2011-12-31 00:00 +14.
		{"apia skipped day", "0 12 * * *", "Pacific/Apia", "2011-12-28T00:00:00Z",
			[]string{"2011-12-28T22:00:00Z", "2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"}},
		// Lord Howe shifts by 30 minutes: 2026-04-05 02:00 +11 -> 01:30 +1030 (15:00Z);
		// 01:30 and 01:45 of the second pass do not fire.
		{"lord howe fall", "*/15 * * * *", "Australia/Lord_Howe", "2026-04-04T14:40:00Z",
			[]string{"2026-04-04T14:45:00Z", "2026-04-04T15:30:00Z", "2026-04-04T15:45:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, Spec{Cron: tc.cron, TZ: tc.tz})
			require.Equal(t, tc.want, nexts(s, utc(tc.from), len(tc.want)))
		})
	}
}

// oracleNext simulates the DST rule by stepping instants minute by minute:
// a matching wall time W fires at the first instant whose wall reading is
// >= W. utcSpec is the expression evaluated by robfig in UTC, which is exact
// plain wall-clock arithmetic. Requires minute-granular expressions, t on a
// minute boundary and transitions on minute boundaries.
func oracleNext(utcSpec *cron.SpecSchedule, loc *time.Location, t time.Time, horizon time.Duration) time.Time {
	wall := func(u time.Time) time.Time {
		_, off := u.In(loc).Zone()
		return time.Unix(u.Unix()+int64(off), 0).UTC()
	}
	var hw time.Time // highest wall reading at or before t (no zone here goes back > 3h)
	for u := t.Add(-3 * time.Hour); !u.After(t); u = u.Add(time.Minute) {
		if w := wall(u); w.After(hw) {
			hw = w
		}
	}
	for u := t.Add(time.Minute); u.Before(t.Add(horizon)); u = u.Add(time.Minute) {
		w := wall(u)
		if !w.After(hw) {
			continue
		}
		if n := utcSpec.Next(hw); !n.After(w) {
			return u
		}
		hw = w
	}
	return time.Time{}
}

func TestDSTOracle(t *testing.T) {
	t.Parallel()
	exprs := []string{"*/15 * * * *", "30 1 * * *", "30 2 * * *", "0 * * * *", "*/7 * * * *", "0 0 * * *", "59 * * * *", "0,30 2,3 * * *", "45 23 * * *"}
	zones := []struct {
		tz   string
		year int
	}{
		{"America/New_York", 2026}, {"Europe/Berlin", 2026}, {"Australia/Lord_Howe", 2026},
		{"America/Sao_Paulo", 2018}, {"Pacific/Chatham", 2026}, {"America/Santiago", 2026},
		{"Pacific/Apia", 2011}, {"Asia/Kolkata", 2026},
	}
	for i, z := range zones {
		t.Run(z.tz, func(t *testing.T) {
			t.Parallel()
			testDSTOracleZone(t, z.tz, z.year, exprs, uint64(i))
		})
	}
}

func testDSTOracleZone(t *testing.T, tz string, year int, exprs []string, seed uint64) {
	rng := rand.New(rand.NewPCG(1, seed))
	loc, err := time.LoadLocation(tz)
	require.NoError(t, err)
	// Transitions in that year (or mid-year if the zone has none).
	var around []time.Time
	for u := time.Date(year, 1, 1, 0, 0, 0, 0, loc); ; {
		_, end := u.ZoneBounds()
		if end.IsZero() || end.Year() != year {
			break
		}
		around = append(around, end)
		u = end
	}
	if len(around) == 0 {
		around = append(around, time.Date(year, 6, 1, 0, 0, 0, 0, loc))
	}
	for _, expr := range exprs {
		s := mustParse(t, Spec{Cron: expr, TZ: tz})
		p, err := parser.Parse(expr)
		require.NoError(t, err)
		ref := *p.(*cron.SpecSchedule)
		ref.Location = time.UTC
		for _, tr := range around {
			for i := 0; i < 15; i++ {
				from := tr.Add(time.Duration(rng.IntN(72*60)-36*60) * time.Minute).Truncate(time.Minute)
				want := oracleNext(&ref, loc, from, 50*time.Hour)
				got := s.Next(from)
				require.True(t, want.Equal(got), "%s %s from %s: want %s got %s", tz, expr, from.UTC(), want.UTC(), got.UTC())
			}
		}
	}
}

// TestMatchesRobfigUTC cross-checks Next against robfig's SpecSchedule in UTC
// (where it has no DST issues) on random instants with fractional seconds.
func TestMatchesRobfigUTC(t *testing.T) {
	t.Parallel()
	exprs := []string{
		"* * * * *", "*/5 * * * *", "0 9 * * 1-5", "15,45 */2 * * *", "0 0 1 * *", "0 0 31 * *",
		"0 12 13 * 5", "0 0 * 2 *", "30 6 * jan,jun sun", "0 0 29 2 *", "5-10/2 3-5 10-20 */3 mon-fri",
		"*/10 * * * * *", "0 0 0 * * *", "59 59 23 31 12 *", "1-3 * * * * ?",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	hi := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, expr := range exprs {
		s := mustParse(t, Spec{Cron: expr})
		p, err := parser.Parse(expr)
		require.NoError(t, err)
		ref := *p.(*cron.SpecSchedule)
		ref.Location = time.UTC
		for i := 0; i < 2000; i++ {
			from := time.Unix(0, lo+rng.Int64N(hi-lo)).UTC()
			if i%4 == 0 {
				from = from.Truncate(time.Minute) // exact boundaries
			}
			want, got := ref.Next(from), s.Next(from)
			require.True(t, want.Equal(got), "%q from %s: robfig %s, got %s", expr, from, want, got)
		}
	}
}

// Monotonicity and "never twice at the same instant" over a whole DST year.
func TestDSTYearStrictlyIncreasing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tz        string
		collapsed int // wall times lost in the spring gap (they share one instant)
	}{
		{"UTC", 0},
		// 02:00..02:50 and 03:00 fire at one instant.
		{"America/New_York", 6},
		{"Europe/Berlin", 6},
		// 02:00, 02:10, 02:20 and 02:30 fire at one instant.
		{"Australia/Lord_Howe", 3},
	} {
		s := mustParse(t, Spec{Cron: "*/10 * * * *", TZ: tc.tz})
		from, end := utc("2025-12-31T23:59:59Z"), utc("2027-01-01T00:00:00Z")
		n := 0
		for {
			next := s.Next(from)
			require.True(t, next.After(from))
			if !next.Before(end) {
				break
			}
			from = next
			n++
		}
		// The zones have the same offset at both ends of 2026, so the UTC year
		// spans exactly 365 local days; the fall-back second pass adds nothing.
		require.Equal(t, 365*144-tc.collapsed, n, tc.tz)
	}
}
