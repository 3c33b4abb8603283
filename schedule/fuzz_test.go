package schedule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse parses arbitrary cron strings (calendar items included) and
// zone names, under every DST policy. It must never
// panic; failures must be *Error; successful parses must return fire times
// strictly after t (or zero), in whole seconds, strictly increasing.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct {
		cron, tz string
		t        int64
	}{
		{"*/5 * * * *", "", 1777629600},
		{"30 2 * * *", "America/New_York", 1772928000},
		{"0 9 * * 1-5", "Europe/Berlin", 1774746000},
		{"0 0 30 2 *", "UTC", 0},
		{"@daily", "Pacific/Apia", 1325152800},
		{"TZ=x", "", -1},
		{"*/0 * * * * *", "Local", 1 << 40},
		{"0 0 L-3 * *", "Australia/Lord_Howe", 1775300000},
		{"0 30 1 15W * 5#3", "America/New_York", 1793500000},
		{"0 0 LW,1 * 5L,0#5", "Pacific/Chatham", 1790000000},
		{"0 0 * 2 sun#5", "UTC", 1},
	} {
		f.Add(seed.cron, seed.tz, seed.t)
	}
	f.Fuzz(func(t *testing.T, expr, tz string, sec int64) {
		// The DST policy follows from the instant: every policy is fuzzed.
		dst := DST{Gap: [...]string{"", GapSkip}[uint64(sec)%2], Overlap: [...]string{"", OverlapLast, OverlapBoth}[uint64(sec)/2%3]}
		s, err := Parse(Spec{Cron: expr, TZ: tz, DST: dst})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Field != "cron" && e.Field != "tz" && e.Field != "schedule") {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			return
		}
		from := time.Unix(sec, int64(uint64(sec)%1e9))
		prev := from
		for i := 0; i < 3; i++ {
			n := s.Next(prev)
			if n.IsZero() {
				return
			}
			if !n.After(prev) {
				t.Fatalf("%q tz=%q: Next(%v) = %v, not after", expr, tz, prev, n)
			}
			if n.Nanosecond() != 0 {
				t.Fatalf("%q tz=%q: Next(%v) = %v, not a whole second", expr, tz, prev, n)
			}
			prev = n
		}
	})
}
