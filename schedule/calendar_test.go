package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCalendarItems pins each calendar item on dates checked by hand
// against a 2026 calendar (2026-01-01 was a Thursday).
func TestCalendarItems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cron string
		from string
		want []string
	}{
		// Last day: Feb has 28 days in 2026, 29 in 2028.
		{"0 0 L * *", "2026-01-15T00:00:00Z", []string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"}},
		{"0 0 L 2 *", "2027-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}},
		// L-3: three days before the last.
		{"0 12 L-3 * *", "2026-01-01T00:00:00Z", []string{"2026-01-28T12:00:00Z", "2026-02-25T12:00:00Z", "2026-03-28T12:00:00Z"}},
		// L-30 only exists in 31-day months.
		{"0 0 L-30 * *", "2026-01-15T00:00:00Z", []string{"2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z", "2026-07-01T00:00:00Z"}},
		// 15W: 2026-02-15 is a Sunday -> Monday 16th; 2026-03-15 Sunday -> 16th;
		// 2026-08-15 Saturday -> Friday 14th; 2026-04-15 Wednesday.
		{"0 9 15W * *", "2026-02-01T00:00:00Z", []string{"2026-02-16T09:00:00Z", "2026-03-16T09:00:00Z", "2026-04-15T09:00:00Z"}},
		{"0 9 15W 8 *", "2026-01-01T00:00:00Z", []string{"2026-08-14T09:00:00Z"}},
		// 1W: 2026-08-01 is a Saturday -> Monday 3rd (not Friday July 31st).
		{"0 9 1W 8 *", "2026-01-01T00:00:00Z", []string{"2026-08-03T09:00:00Z"}},
		// 31W: 2026-05-31 is a Sunday -> Friday 29th; months without a 31st fire nothing.
		{"0 9 31W * *", "2026-04-01T00:00:00Z", []string{"2026-05-29T09:00:00Z", "2026-07-31T09:00:00Z"}},
		// LW: 2026-01-31 Saturday -> 30th; 2026-05-31 Sunday -> 29th; 2026-03-31 Tuesday.
		{"0 18 LW * *", "2026-01-01T00:00:00Z", []string{"2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z", "2026-03-31T18:00:00Z"}},
		// 1#2: second Monday.
		{"0 10 * * 1#2", "2026-01-01T00:00:00Z", []string{"2026-01-12T10:00:00Z", "2026-02-09T10:00:00Z", "2026-03-09T10:00:00Z"}},
		// fri#5: months with five Fridays only (Jan, May, Jul, Oct in 2026).
		{"0 10 * * fri#5", "2026-01-01T00:00:00Z", []string{"2026-01-30T10:00:00Z", "2026-05-29T10:00:00Z", "2026-07-31T10:00:00Z"}},
		// 5L: last Friday.
		{"0 10 * * 5L", "2026-01-01T00:00:00Z", []string{"2026-01-30T10:00:00Z", "2026-02-27T10:00:00Z", "2026-03-27T10:00:00Z"}},
		// Five Sundays in February: only when Feb 29 is a Sunday (2032, then 2060).
		{"0 0 * 2 0#5", "2026-01-01T00:00:00Z", []string{"2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z"}},
		// Both fields restricted: either matches (the cron rule): the 1st or the last Friday.
		{"0 0 1 * 5L", "2026-01-01T00:00:00Z", []string{"2026-01-30T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-27T00:00:00Z"}},
		// One field "*" or "?": the other decides alone.
		{"0 0 ? * 5L", "2026-01-01T00:00:00Z", []string{"2026-01-30T00:00:00Z"}},
		{"0 0 L * ?", "2026-01-01T00:00:00Z", []string{"2026-01-31T00:00:00Z"}},
		// Lists mix plain days and calendar items.
		{"0 0 1,15,L * *", "2026-02-02T00:00:00Z", []string{"2026-02-15T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"0 0 * * 1#1,5L", "2026-01-01T00:00:00Z", []string{"2026-01-05T00:00:00Z", "2026-01-30T00:00:00Z", "2026-02-02T00:00:00Z"}},
		// Seconds field and lower case.
		{"30 0 0 l * *", "2026-01-01T00:00:00Z", []string{"2026-01-31T00:00:30Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.cron, func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, Spec{Cron: tc.cron})
			require.Equal(t, tc.want, nexts(s, utc(tc.from), len(tc.want)))
		})
	}
}

func TestCalendarErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cron, reason string }{
		{"0 0 L-31 * *", "L-n wants n from 0 to 30"},
		{"0 0 L-x * *", "L-n wants n from 0 to 30"},
		{"0 0 1-5W * *", "nW wants one day n from 1 to 31"},
		{"0 0 0W * *", "nW wants one day n from 1 to 31"},
		{"0 0 32W * *", "nW wants one day n from 1 to 31"},
		{"0 0 W * *", "nW wants one day n"},
		{"0 0 L/2 * *", "L, W may only appear as"},
		{"0 0 1#2 * *", "L, W may only appear as"},
		{"0 0 * * L", "L alone is not accepted"},
		{"0 0 * * 7L", "dL wants a weekday"},
		{"0 0 * * 1#6", "d#n wants a weekday d"},
		{"0 0 * * 1#0", "d#n wants a weekday d"},
		{"0 0 * * 7#1", "d#n wants a weekday d"},
		{"0 0 * * 1-5#1", "d#n wants a weekday d"},
		{"0 0 * * 1#", "d#n wants a weekday d"},
		{"0 0 * * 5W", "W is for day-of-month"},
		{"0 0 * * LW", "W is for day-of-month"},
	} {
		_, err := Parse(Spec{Cron: tc.cron})
		var e *Error
		require.True(t, errors.As(err, &e), "%q: %v", tc.cron, err)
		require.Equal(t, "cron", e.Field, tc.cron)
		require.Contains(t, e.Reason, tc.reason, tc.cron)
	}
}

func TestDSTPolicyErrors(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T12:00:00Z")
	for _, tc := range []struct {
		spec   Spec
		reason string
	}{
		{Spec{Every: time.Minute, DST: DST{Gap: GapSkip}}, "cron schedules only"},
		{Spec{At: at, DST: DST{Overlap: OverlapBoth}}, "cron schedules only"},
		{Spec{Cron: "@daily", DST: DST{Gap: "later"}}, `unknown gap policy "later"`},
		{Spec{Cron: "@daily", DST: DST{Overlap: "second"}}, `unknown overlap policy "second"`},
		{Spec{Cron: "@daily", DST: DST{Gap: "Skip"}}, `unknown gap policy "Skip"`},
	} {
		_, err := Parse(tc.spec)
		var e *Error
		require.True(t, errors.As(err, &e), "%+v: %v", tc.spec, err)
		require.Equal(t, "dst", e.Field)
		require.Contains(t, e.Reason, tc.reason)
	}
	// Spelled-out defaults are the defaults.
	require.Equal(t, DST{}, DST{Gap: GapShift, Overlap: OverlapFirst}.Normalize())
	require.Equal(t, DST{Gap: GapSkip, Overlap: OverlapBoth}, DST{Gap: GapSkip, Overlap: OverlapBoth}.Normalize())
}

// TestDSTPolicies pins each policy on New York's 2026 transitions:
// 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
func TestDSTPolicies(t *testing.T) {
	t.Parallel()
	const ny = "America/New_York"
	tests := []struct {
		cron         string
		gap, overlap string
		from         string
		want         []string
	}{
		{"30 2 * * *", GapShift, "", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"30 2 * * *", GapSkip, "", "2026-03-07T12:00:00Z", []string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		// 02:00 and 02:30 are skipped; 03:00 EDT exists and fires.
		{"*/30 * * * *", GapSkip, "", "2026-03-08T06:15:00Z", []string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{"30 1 * * *", "", OverlapFirst, "2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"30 1 * * *", "", OverlapLast, "2026-10-31T12:00:00Z", []string{"2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
		{"30 1 * * *", "", OverlapBoth, "2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
		// From inside the first pass, "last" still owes 01:00 and 01:30 of the second pass.
		{"*/30 * * * *", "", OverlapLast, "2026-11-01T05:40:00Z", []string{"2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"}},
		{"*/30 * * * *", "", OverlapBoth, "2026-11-01T04:50:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"}},
		// Seconds: every second of the repeated hour fires twice under both.
		{"* * * * * *", "", OverlapBoth, "2026-11-01T05:59:58Z", []string{"2026-11-01T05:59:59Z", "2026-11-01T06:00:00Z", "2026-11-01T06:00:01Z"}},
		// A skipped hour of seconds is passed over in one step.
		{"* * * * * *", GapSkip, "", "2026-03-08T06:59:58Z", []string{"2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z", "2026-03-08T07:00:01Z"}},
		// Calendar and policy together: 1:30 on the first Sunday of November, both passes.
		{"30 1 * 11 0#1", "", OverlapBoth, "2026-01-01T00:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2027-11-07T05:30:00Z"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s/%s", tc.cron, tc.gap, tc.overlap, tc.from), func(t *testing.T) {
			t.Parallel()
			s := mustParse(t, Spec{Cron: tc.cron, TZ: ny, DST: DST{Gap: tc.gap, Overlap: tc.overlap}})
			require.Equal(t, tc.want, nexts(s, utc(tc.from), len(tc.want)))
			// Last agrees with Next under every policy.
			for i := 1; i < len(tc.want); i++ {
				require.Equal(t, tc.want[i-1], Last(s, utc(tc.from), utc(tc.want[i]).Add(-time.Nanosecond)).UTC().Format(time.RFC3339Nano))
			}
		})
	}
}

// FuzzCalendar builds a valid expression with calendar items from the fuzz
// input, in two spellings (numbers or names, case, "?" or "*", list
// order). Both must parse, and give the same fires from the same instant
// under the same DST policy: the round trip of valid expressions.
func FuzzCalendar(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, int64(1774746000))
	f.Add([]byte{9, 200, 31, 17, 250, 3, 1, 44, 8}, int64(1793000000))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, int64(0))
	f.Fuzz(func(t *testing.T, in []byte, sec int64) {
		next := func() int {
			if len(in) == 0 {
				return 0
			}
			b := int(in[0])
			in = in[1:]
			return b
		}
		names := [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
		var domA, domB, dowA, dowB []string
		for n := next() % 3; n >= 0; n-- {
			switch next() % 5 {
			case 0:
				domA, domB = append(domA, "L"), append(domB, "l")
			case 1:
				k := next() % 31
				domA, domB = append(domA, fmt.Sprintf("L-%d", k)), append(domB, fmt.Sprintf("l-%02d", k))
			case 2:
				d := next()%31 + 1
				domA, domB = append(domA, fmt.Sprintf("%dW", d)), append(domB, fmt.Sprintf("%dw", d))
			case 3:
				domA, domB = append(domA, "LW"), append(domB, "lw")
			default:
				d := next()%31 + 1
				domA, domB = append(domA, fmt.Sprint(d)), append(domB, fmt.Sprint(d))
			}
		}
		for n := next() % 3; n >= 0; n-- {
			d := next() % 7
			switch next() % 3 {
			case 0:
				k := next()%5 + 1
				dowA, dowB = append(dowA, fmt.Sprintf("%d#%d", d, k)), append(dowB, fmt.Sprintf("%s#%d", strings.ToUpper(names[d]), k))
			case 1:
				dowA, dowB = append(dowA, fmt.Sprintf("%dL", d)), append(dowB, names[d]+"l")
			default:
				dowA, dowB = append(dowA, fmt.Sprint(d)), append(dowB, names[d])
			}
		}
		// Reverse B's lists: order does not matter.
		for _, l := range [][]string{domB, dowB} {
			for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
				l[i], l[j] = l[j], l[i]
			}
		}
		a := [2]string{strings.Join(domA, ","), strings.Join(dowA, ",")}
		b := [2]string{strings.Join(domB, ","), strings.Join(dowB, ",")}
		switch next() % 3 { // sometimes one side is a star
		case 0:
			a[0], b[0] = "*", "?"
		case 1:
			a[1], b[1] = "?", "*"
		}
		hour := next() % 24
		zones := [...]string{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"}
		tz := zones[next()%len(zones)]
		gaps, overlaps := [...]string{"", GapSkip}, [...]string{"", OverlapLast, OverlapBoth}
		dst := DST{Gap: gaps[next()%2], Overlap: overlaps[next()%3]}
		exprA := fmt.Sprintf("0 %d %s * %s", hour, a[0], a[1])
		exprB := fmt.Sprintf("00 %02d %s * %s", hour, b[0], b[1])
		sa, err := Parse(Spec{Cron: exprA, TZ: tz, DST: dst})
		if err != nil {
			t.Fatalf("%q: %v", exprA, err)
		}
		sb, err := Parse(Spec{Cron: exprB, TZ: tz, DST: dst})
		if err != nil {
			t.Fatalf("%q: %v", exprB, err)
		}
		from := time.Unix(sec%(1<<40), 0)
		for i := 0; i < 4; i++ {
			na, nb := sa.Next(from), sb.Next(from)
			if !na.Equal(nb) {
				t.Fatalf("%q and %q (tz %s, %+v) from %v: %v and %v", exprA, exprB, tz, dst, from, na, nb)
			}
			if na.IsZero() {
				return
			}
			if !na.After(from) || na.Nanosecond() != 0 {
				t.Fatalf("%q from %v: %v", exprA, from, na)
			}
			from = na
		}
	})
}
