package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv38Keys are job keys that sort at the edges of the due index's key
// bytes: empty, 0x00 and 0xff bytes, prefixes of each other.
var adv38Keys = []string{"", "\x00", "\x00\x00", "\xff", "\xff\xff", "a", "a\x00", "a\xff", "ab", keyN(1), keyN(2), keyN(3), keyN(10), keyN(11)}

// TestAdversary38ScannedMovesMatchApplyMoves: twin stores get the same
// generated history of puts, deletes, rebuilds, reopens and fan-out scans
// (DueUpTo from the start or a cursor, continued in up to three calls);
// one applies the scan's honest moves with ApplyMoves, the other with
// ApplyScannedMoves over the scanned span. Moves go to no time, the same
// time, earlier or later, inside the span, to clamped times (before
// minTime, after maxTime), sometimes without From, sometimes duplicated
// (last move wins), sometimes with extra moves of keys outside the span.
// A tiny memtable makes large batches flushable batches and forces
// flushes/compactions of range tombstones. Both stores must hold the same
// indexes, pass checkConsistent, and scan the same.
func TestAdversary38ScannedMovesMatchApplyMoves(t *testing.T) {
	t.Parallel()
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)   // clamps to maxTime
	early := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC) // clamps to minTime
	seeds := uint64(60)
	if testing.Short() {
		seeds = 15
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0xad38))
		opts := Options{Indexer: testIndexer}
		if seed%2 == 1 {
			opts.MemTableSize = 1 << 16
		}
		// b removes every scanned span of 1-3 moves or more with a range
		// deletion (minRangeDeletion lowered), so both ways are driven.
		lower := func(s *Store) *Store { s.minSpan = 1 + int(seed%3); return s }
		a := newMemStore(t, opts)
		b := lower(newMemStore(t, opts))
		bucket := map[string]string{} // the table's bucket per key (present: in the table)
		nKeys := len(adv38Keys)
		if seed%3 == 0 {
			nKeys = 4 + rng.IntN(len(adv38Keys)-4)
		}
		extraKeys := 0
		if seed%5 == 0 {
			extraKeys = 300 + rng.IntN(3000) // bulk, for large batches
		}
		key := func() string {
			if extraKeys > 0 && rng.IntN(2) == 0 {
				return keyN(100 + rng.IntN(extraKeys))
			}
			return adv38Keys[rng.IntN(nKeys)]
		}
		both := func(f func(s *Store) error) {
			require.NoError(t, f(a))
			require.NoError(t, f(b))
		}
		if extraKeys > 0 {
			for i := range extraKeys {
				k := keyN(100 + i)
				v := val(at(rng.IntN(50)), "")
				both(func(s *Store) error { return s.Set(k, v) })
				bucket[k] = ""
			}
		}
		randTime := func() time.Time {
			switch rng.IntN(12) {
			case 0:
				return far
			case 1:
				return early
			case 2:
				return time.Unix(0, math.MaxInt64)
			case 3:
				return time.Unix(0, math.MinInt64)
			}
			return at(rng.IntN(200) - 50)
		}
		for op := range 250 {
			msg := fmt.Sprintf("seed %d op %d", seed, op)
			switch r := rng.IntN(24); {
			case r < 7:
				k := key()
				var due time.Time
				if rng.IntN(6) > 0 {
					due = at(rng.IntN(200) - 50)
				}
				bk := []string{"", "b1", "b\x00"}[rng.IntN(3)]
				v := val(due, bk)
				both(func(s *Store) error { return s.Set(k, v) })
				bucket[k] = bk
			case r < 8:
				k := key()
				both(func(s *Store) error { return s.Delete(k) })
				delete(bucket, k)
			case r < 9:
				both(func(s *Store) error { return s.RebuildIndexes(at(0)) })
			case r < 10:
				a, b = reopen(t, a), lower(reopen(t, b))
			default: // the fan-out
				upTo := randTime()
				limit := 1 + rng.IntN(12)
				if extraKeys > 0 && rng.IntN(3) == 0 {
					limit = 0
				}
				var after Due
				if rng.IntN(3) == 0 {
					after = Due{At: randTime(), Key: key()}
				}
				due, err := b.DueUpTo(upTo, after, limit)
				require.NoError(t, err)
				dueA, err := a.DueUpTo(upTo, after, limit)
				require.NoError(t, err)
				require.Equal(t, dueA, due, msg)
				for parts := 0; parts < 2 && limit > 0 && len(due) > 0 && len(due)%limit == 0 && rng.IntN(2) == 0; parts++ {
					more, err := b.DueUpTo(upTo, due[len(due)-1], limit)
					require.NoError(t, err)
					moreA, err := a.DueUpTo(upTo, due[len(due)-1], limit)
					require.NoError(t, err)
					require.Equal(t, moreA, more, msg)
					due = append(due, more...)
				}
				if len(due) == 0 {
					continue
				}
				var moves []Move
				for i, d := range due {
					m := Move{Key: d.Key, From: d.At, Bucket: bucket[d.Key]}
					if rng.IntN(8) == 0 {
						m.From, m.Bucket = time.Time{}, ""
					}
					switch rng.IntN(8) {
					case 0:
						m.To = time.Time{}
					case 1:
						m.To = d.At
					case 2:
						m.To = due[rng.IntN(len(due))].At // inside the span
					case 3:
						m.To = due[len(due)-1].At.Add(time.Duration(rng.IntN(3)) * time.Nanosecond)
					case 4:
						m.To = randTime()
					default:
						m.To = d.At.Add(time.Duration(rng.IntN(200)-30) * time.Second)
					}
					moves = append(moves, m)
					if rng.IntN(10) == 0 { // the same key again: the last move wins
						m2 := m
						m2.To = []time.Time{{}, d.At, randTime(), due[i].At.Add(time.Second)}[rng.IntN(4)]
						moves = append(moves, m2)
					}
				}
				for range rng.IntN(3) { // keys outside the span (or not in the table)
					k := key()
					m := Move{Key: k, To: randTime()}
					if rng.IntN(4) == 0 {
						m.To = time.Time{}
					}
					moves = append(moves, m)
				}
				rng.Shuffle(len(moves), func(i, j int) { moves[i], moves[j] = moves[j], moves[i] })
				require.NoError(t, a.ApplyMoves(moves, upTo), msg)
				require.NoError(t, b.ApplyScannedMoves(moves, due[0], due[len(due)-1], upTo), msg)
			}
			if op%10 == 0 || rng.IntN(8) == 0 {
				checkConsistent(t, b)
				require.Equal(t, dumpIndexes(t, a), dumpIndexes(t, b), msg)
			}
		}
		checkConsistent(t, a)
		checkConsistent(t, b)
		require.Equal(t, dumpIndexes(t, a), dumpIndexes(t, b), "seed %d", seed)
		b = reopen(t, b)
		a = reopen(t, a)
		checkConsistent(t, b)
		require.Equal(t, dumpIndexes(t, a), dumpIndexes(t, b), "seed %d after reopen", seed)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
}
