package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	// Random instants across 2026 (including both DST transitions).
	rng := rand.New(rand.NewPCG(5, 6))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := make([]time.Time, 1024)
	for i := range ts {
		ts[i] = base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
	}
	for _, bc := range []struct {
		name string
		spec Spec
	}{
		{"cron */5 * * * * UTC", Spec{Cron: "*/5 * * * *"}},
		{"cron 0 9 * * 1-5 Europe/Berlin", Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}},
		{"cron 30 2 * * * America/New_York", Spec{Cron: "30 2 * * *", TZ: "America/New_York"}},
		{"every 1m", Spec{Every: time.Minute}},
		{"union of 3, 50 dates and 10 ranges excluded", benchSet()},
	} {
		s, err := Parse(bc.spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = s.Next(ts[i&1023])
				i++
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	spec := Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(spec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCacheGet(b *testing.B) {
	c := NewCache(1024)
	spec := Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Get(spec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCacheGetEvery reads the schedules of `every` jobs spread over
// a day (distinct starts, as `chronos bench --every 24h` registers them)
// through the cache, and parses them without it: at 10M jobs the
// scheduler's index pass at the end of a recovery spent half its
// indexer's time in the cache's map (86,400 distinct keys).
func BenchmarkCacheGetEvery(b *testing.B) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	// The spec of job i, built where it is read (as a decoded record's is).
	spec := func(i, distinct int) Spec {
		return Spec{Every: 24 * time.Hour, Start: t0.Add(time.Duration(i%distinct) * time.Second)}
	}
	for _, distinct := range []int{1, 86_400} {
		b.Run(fmt.Sprintf("distinct=%d/cache", distinct), func(b *testing.B) {
			c := NewCache(100_000)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.Get(spec(i, distinct)); err != nil {
					b.Fatal(err)
				}
				i += 7919
			}
		})
		b.Run(fmt.Sprintf("distinct=%d/parse", distinct), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := Parse(spec(i, distinct)); err != nil {
					b.Fatal(err)
				}
				i += 7919
			}
		})
	}
}

// benchSet is a union of three schedules with 50 dates (Europe/Berlin)
// and 10 ranges excluded across 2026.
func benchSet() Spec {
	s := Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", Also: []Spec{{Every: 7 * time.Minute}, {Cron: "30 2 * * *", TZ: "America/New_York"}},
		Exclude: Exclusions{TZ: "Europe/Berlin"}}
	for i := range 50 {
		s.Exclude.Dates = append(s.Exclude.Dates, DateOf(time.Date(2026, 1, 1+7*i, 0, 0, 0, 0, time.UTC)))
	}
	for i := range 10 {
		from := time.Date(2026, time.Month(1+i), 15, 0, 0, 0, 0, time.UTC)
		s.Exclude.Ranges = append(s.Exclude.Ranges, Range{From: from, To: from.Add(36 * time.Hour)})
	}
	return s
}
