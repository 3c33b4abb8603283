package history

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
)

// BenchmarkStoreFold measures what the history group does per put and per
// fire with one partition's store (1,000,000 jobs over 12 partitions:
// 83,333 jobs), on disk, as goka drives it: read the job's record, fold,
// write it back (the changelog produce is not included), with the store
// settings of before and since --history-cache-bytes (a 1 MiB block cache
// without Bloom filters; instance.DefaultHistoryCacheBytes over 12
// partitions, 16 MiB, and instance.HistoryStoreBloomBits), and each
// change alone. Each store is loaded with `jobs` puts (a Get of a missing
// key, FoldChange, Set: the registration, reported as register-ns/job),
// then b.N fires of random jobs are folded (Get, FoldFire, Set).
//
// go test -run X -bench StoreFold -benchtime 200000x ./processors/history/
func BenchmarkStoreFold(b *testing.B) {
	const jobs = 83_333
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		opts store.Options
	}{
		{"cache=1MiB/bloom=0", store.Options{CacheSize: 1 << 20, MemTableSize: 2 << 20}}, // before --history-cache-bytes
		{"cache=1MiB/bloom=10", store.Options{CacheSize: 1 << 20, MemTableSize: 2 << 20, BloomBitsPerKey: 10}},
		{"cache=16MiB/bloom=0", store.Options{CacheSize: 16 << 20, MemTableSize: 2 << 20}},
		{"cache=16MiB/bloom=10", store.Options{CacheSize: 16 << 20, MemTableSize: 2 << 20, BloomBitsPerKey: 10}}, // the default now
	} {
		s := store.New(b.TempDir(), c.opts)
		if err := s.Open(); err != nil {
			b.Fatal(err)
		}
		// The bench's ids, unpadded (job-12 sorts before job-2), 1 in 12.
		key := func(i int) string { return "job-" + strconv.Itoa(i*12+5) }
		fold := func(k string, f func([]byte) ([]byte, bool, error)) {
			v, err := s.Get(k)
			if err != nil {
				b.Fatal(err)
			}
			out, changed, err := f(v)
			if err != nil {
				b.Fatal(err)
			}
			if changed {
				if err := s.Set(k, out); err != nil {
					b.Fatal(err)
				}
			}
		}
		start := time.Now()
		for i := range jobs {
			c := codecs.Change{Offset: int64(i), At: at, Op: codecs.OpPut, Actor: "bench", Detail: "every 1m0s"}
			fold(key(i), func(rec []byte) ([]byte, bool, error) { return codecs.FoldChange(rec, c, DefaultChanges) })
		}
		register := time.Since(start)
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(register.Nanoseconds())/jobs, "register-ns/job")
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range b.N {
				t := at.Add(time.Duration(i/jobs) * time.Minute)
				d := codecs.Dispatch{Trigger: codecs.TriggerSchedule, ScheduledAt: t, FiredAt: t.Add(80 * time.Millisecond)}
				fold(key(rng.IntN(jobs)), func(rec []byte) ([]byte, bool, error) {
					return codecs.FoldFire(rec, t, t.Format(time.RFC3339), DefaultFires, func(f *codecs.FireEntry) { applyDispatch(f, d) })
				})
			}
		})
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreFoldOffsets is BenchmarkStoreFold's fire with the store
// settings of now (16 MiB cache, Bloom filters) and the local offset set
// after every write, as goka does when the changelog write is acknowledged:
// persisted each time (offset=each, before) or every
// instance.HistoryStoreOffsetEvery offsets (offset=every1000, now).
//
// go test -run X -bench StoreFoldOffsets -benchtime 200000x ./processors/history/
func BenchmarkStoreFoldOffsets(b *testing.B) {
	const jobs = 83_333
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	key := func(i int) string { return "job-" + strconv.Itoa(i*12+5) }
	for _, c := range []struct {
		name  string
		every int64
	}{{"offset=each", 0}, {"offset=every1000", 1000}} {
		s := store.New(b.TempDir(), store.Options{CacheSize: 16 << 20, MemTableSize: 2 << 20, BloomBitsPerKey: 10, OffsetEvery: c.every,
			Logger: func(string, ...any) {}})
		if err := s.Open(); err != nil {
			b.Fatal(err)
		}
		if err := s.MarkRecovered(); err != nil {
			b.Fatal(err)
		}
		var offset int64
		fold := func(k string, f func([]byte) ([]byte, bool, error)) {
			v, err := s.Get(k)
			if err != nil {
				b.Fatal(err)
			}
			out, changed, err := f(v)
			if err != nil {
				b.Fatal(err)
			}
			if changed {
				if err := s.Set(k, out); err != nil {
					b.Fatal(err)
				}
				offset++
				if err := s.SetOffset(offset); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i := range jobs {
			c := codecs.Change{Offset: int64(i), At: at, Op: codecs.OpPut, Actor: "bench", Detail: "every 1m0s"}
			fold(key(i), func(rec []byte) ([]byte, bool, error) { return codecs.FoldChange(rec, c, DefaultChanges) })
		}
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for i := range b.N {
				t := at.Add(time.Duration(i/jobs) * time.Minute)
				d := codecs.Dispatch{Trigger: codecs.TriggerSchedule, ScheduledAt: t, FiredAt: t.Add(80 * time.Millisecond)}
				fold(key(rng.IntN(jobs)), func(rec []byte) ([]byte, bool, error) {
					return codecs.FoldFire(rec, t, t.Format(time.RFC3339), DefaultFires, func(f *codecs.FireEntry) { applyDispatch(f, d) })
				})
			}
		})
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
