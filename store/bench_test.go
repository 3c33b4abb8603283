package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func benchStore(b *testing.B) *Store {
	s := New(b.TempDir(), Options{Indexer: testIndexer, Logger: quiet})
	require.NoError(b, s.Open())
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkSetWithIndex measures Set with index maintenance on disk
// (NoSync): every Set moves the key's due entry and sometimes its bucket.
func BenchmarkSetWithIndex(b *testing.B) {
	s := benchStore(b)
	const keys = 10000
	vals := make([][]byte, 64)
	for i := range vals {
		vals[i] = val(at(i), fmt.Sprint("bucket-", i%8))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Set(keyN(i%keys), vals[i%len(vals)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDueScanAndMove scans 5000 due entries and moves them all one
// hour forward in one ApplyMoves batch per iteration, with the scan
// cursor starting at the current window (tombstones are never re-scanned).
func BenchmarkDueScanAndMove(b *testing.B) {
	s := benchStore(b)
	const n = 5000
	for i := 0; i < n; i++ {
		require.NoError(b, s.Set(keyN(i), val(t0.Add(time.Duration(i)), "")))
	}
	windowStart := t0
	moves := make([]Move, 0, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		upTo := windowStart.Add(time.Hour - 1)
		due, err := s.DueUpTo(upTo, Due{At: windowStart.Add(-1)}, n)
		if err != nil {
			b.Fatal(err)
		}
		if len(due) != n {
			b.Fatalf("scanned %d, want %d", len(due), n)
		}
		moves = moves[:0]
		for _, d := range due {
			moves = append(moves, Move{Key: d.Key, To: d.At.Add(time.Hour)})
		}
		if err := s.ApplyMoves(moves, upTo); err != nil {
			b.Fatal(err)
		}
		windowStart = windowStart.Add(time.Hour)
	}
}

// BenchmarkSteadyAdvance is one partition of the steady 1M-jobs-a-minute
// load: 84,000 jobs, each due every minute, spread over the seconds. Each
// iteration advances one second: it scans the due index from the start, as
// the scheduler does (zero cursor), and moves the ~1,400 due entries a
// minute forward. The deleted entries pile up as tombstones ahead of the
// live ones.
func BenchmarkSteadyAdvance(b *testing.B) {
	s := benchStore(b)
	const jobs, every = 84_000, 60
	for i := 0; i < jobs; i++ {
		require.NoError(b, s.Set(keyN(i), val(t0.Add(time.Duration(i%every)*time.Second), "")))
	}
	moves := make([]Move, 0, jobs/every+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		upTo := t0.Add(time.Duration(i) * time.Second)
		due, err := s.DueUpTo(upTo, Due{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(due) < jobs/every {
			b.Fatalf("second %d: scanned %d, want %d", i, len(due), jobs/every)
		}
		moves = moves[:0]
		for _, d := range due {
			moves = append(moves, Move{Key: d.Key, To: d.At.Add(every * time.Second)})
		}
		if err := s.ApplyMoves(moves, upTo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecoveryReplay measures goka's replay of a changelog into a
// fresh store that defers its indexes: per record a Set (a job record of
// ~300 bytes, random keys) and a SetOffset, then MarkRecovered's index
// build, per record, with the bytes Pebble's compactions wrote per record.
// "batched/l0=32" is the store as the instance configures it (recovery
// batches, --store-recovery-l0-compaction-threshold 32, its default since
// 2026-12-06; 16 before); "per-record/l0=0" (Pebble's default, 4) is the
// store before both.
func BenchmarkRecoveryReplay(b *testing.B) {
	for _, c := range []struct {
		batched bool
		l0      int
	}{{true, 32}, {true, 16}, {true, 0}, {false, 16}, {false, 0}} {
		name := fmt.Sprintf("batched/l0=%d", c.l0)
		if !c.batched {
			name = fmt.Sprintf("per-record/l0=%d", c.l0)
		}
		b.Run(name, func(b *testing.B) {
			s := New(b.TempDir(), Options{Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: c.l0})
			require.NoError(b, s.Open())
			b.Cleanup(func() { _ = s.Close() })
			s.batching = c.batched
			v := make([]byte, 0, 320)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v = append(v[:0], val(at(i%3600), fmt.Sprint("b", i%8))...)
				v = append(v, "padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding-padding"...)
				if err := s.Set(fmt.Sprintf("job-%016x", uint64(i)*0x9E3779B97F4A7C15), v); err != nil {
					b.Fatal(err)
				}
				if err := s.SetOffset(int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			// MarkRecovered may reopen the DB (new metrics): count both.
			compacted := s.db.Metrics().Total().TableBytesCompacted
			reopened := s.tuned()
			if err := s.MarkRecovered(); err != nil {
				b.Fatal(err)
			}
			// The compactions a held level 0 owes run after MarkRecovered
			// releases it: count them too (once none has run for 0.3 s, at
			// most 2 min), outside the timed part.
			b.StopTimer()
			for quiet, deadline := 0, time.Now().Add(2*time.Minute); quiet < 6 && time.Now().Before(deadline); {
				if s.db.Metrics().Compact.NumInProgress == 0 {
					quiet++
				} else {
					quiet = 0
				}
				time.Sleep(50 * time.Millisecond)
			}
			if reopened {
				compacted += s.db.Metrics().Total().TableBytesCompacted
			} else {
				compacted = s.db.Metrics().Total().TableBytesCompacted
			}
			b.ReportMetric(float64(compacted)/float64(b.N), "compacted-B/rec")
		})
	}
}

// BenchmarkKeyFilterBuild measures the key filter's build over a
// recovered table of 300,000 job records of ~300 bytes: "counted" reads
// the table's keys twice (a count, then the adds: a store that was not
// empty at Open), "sized" once, sized by the recovery's writes (a store
// that was: MarkRecovered since 2026-12-06). Per build.
func BenchmarkKeyFilterBuild(b *testing.B) {
	const records = 300_000
	s := New(b.TempDir(), Options{Logger: quiet, KeyFilter: true, DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: 16})
	require.NoError(b, s.Open())
	b.Cleanup(func() { _ = s.Close() })
	s.batching = true
	v := make([]byte, 0, 320)
	for i := range records {
		v = append(append(v[:0], val(at(i%3600), "b")...), strings.Repeat("padding-", 36)...)
		require.NoError(b, s.Set(fmt.Sprintf("job-%016x", uint64(i)*0x9E3779B97F4A7C15), v))
	}
	require.NoError(b, s.MarkRecovered())
	for _, c := range []struct {
		name string
		keys int64
	}{{"counted", -1}, {"sized", records}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, s.acquire())
				s.wmu.Lock()
				err := s.buildFilterSizedLocked(false, c.keys)
				s.wmu.Unlock()
				s.mu.RUnlock()
				require.NoError(b, err)
			}
		})
	}
}
