package store

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDueUpToFromTheFloorMatchesAModel: scans that start at the floor (the
// first entry an earlier scan from the start found) return exactly what a
// model of the index holds, over generated histories of puts, deletes,
// moves (with and without From; applied one by one or, as the fan-out
// does, with the scanned span removed at once by ApplyScannedMoves),
// rebuilds and scans from the start or from a cursor, with limits. A write below the floor must lower it: a put or a
// move of a job to a time before every entry is always seen.
func TestDueUpToFromTheFloorMatchesAModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(120) {
		rng := rand.New(rand.NewPCG(seed, 0xf1002))
		s := newMemStore(t, Options{Indexer: testIndexer})
		s.minSpan = 1 + int(seed%3)     // a range deletion for spans this small too
		model := map[string]time.Time{} // key -> due (absent: no entry)
		bucket := map[string]string{}
		nKeys := 1 + rng.IntN(40)
		expect := func(upTo time.Time, after Due, limit int) []Due {
			var all []Due
			for k, at := range model {
				d := Due{At: at, Key: k}
				if !at.After(upTo) && (after == Due{} || at.After(after.At) || at.Equal(after.At) && k > after.Key) {
					all = append(all, d)
				}
			}
			slices.SortFunc(all, func(a, b Due) int {
				if c := a.At.Compare(b.At); c != 0 {
					return c
				}
				return strings.Compare(a.Key, b.Key)
			})
			if limit > 0 && len(all) > limit {
				all = all[:limit]
			}
			return all
		}
		for op := range 300 {
			k := keyN(rng.IntN(nKeys))
			switch r := rng.IntN(20); {
			case r < 5: // put, often below everything
				at := at(rng.IntN(400) - 100)
				b := []string{"", "b1"}[rng.IntN(2)]
				require.NoError(t, s.Set(k, val(at, b)))
				model[k], bucket[k] = at, b
			case r < 6:
				require.NoError(t, s.Delete(k))
				delete(model, k)
				delete(bucket, k)
			case r < 9: // the fan-out: scan from the start or after its cursor, in one or two parts, move what it saw later (or away)
				upTo := at(rng.IntN(400) - 100)
				limit := 1 + rng.IntN(10)
				var after Due
				if rng.IntN(3) == 0 {
					after = Due{At: at(rng.IntN(400) - 100), Key: keyN(rng.IntN(nKeys))}
				}
				due, err := s.DueUpTo(upTo, after, limit)
				require.NoError(t, err)
				require.Equal(t, expect(upTo, after, limit), nilIfEmpty(due), "seed %d op %d", seed, op)
				if len(due) == limit && rng.IntN(2) == 0 {
					more, err := s.DueUpTo(upTo, due[len(due)-1], limit)
					require.NoError(t, err)
					require.Equal(t, expect(upTo, due[len(due)-1], limit), nilIfEmpty(more), "seed %d op %d", seed, op)
					due = append(due, more...)
				}
				var moves []Move
				for _, d := range due {
					to := time.Time{}
					if rng.IntN(5) > 0 {
						to = d.At.Add(time.Duration(rng.IntN(200)-50) * time.Second) // sometimes earlier
					}
					m := Move{Key: d.Key, To: to}
					if rng.IntN(2) == 0 {
						m.From, m.Bucket = d.At, bucket[d.Key]
					}
					moves = append(moves, m)
					if to.IsZero() {
						delete(model, d.Key)
					} else {
						model[d.Key] = to
					}
				}
				if len(due) > 0 && rng.IntN(2) == 0 {
					// The fan-out's way: the scanned span goes in one range
					// deletion; every entry of it has its move.
					require.NoError(t, s.ApplyScannedMoves(moves, due[0], due[len(due)-1], upTo))
					checkConsistent(t, s)
				} else {
					require.NoError(t, s.ApplyMoves(moves, upTo))
				}
			case r < 10:
				require.NoError(t, s.RebuildIndexes(time.Time{}))
				model = map[string]time.Time{}
				for key, v := range tableState(t, s) {
					if e, err := testIndexer(nil, key, []byte(v)); err == nil && !e.Due.IsZero() {
						model[key] = e.Due.UTC()
					}
				}
			default: // a scan from the start or after a cursor, with or without a limit
				upTo := at(rng.IntN(500) - 100)
				var after Due
				if rng.IntN(2) == 0 {
					after = Due{At: at(rng.IntN(400) - 100), Key: keyN(rng.IntN(nKeys))}
				}
				limit := rng.IntN(8)
				got, err := s.DueUpTo(upTo, after, limit)
				require.NoError(t, err)
				require.Equal(t, expect(upTo, after, limit), nilIfEmpty(got), "seed %d op %d", seed, op)
			}
		}
		checkConsistent(t, s)
	}
}

func nilIfEmpty(ds []Due) []Due {
	if len(ds) == 0 {
		return nil
	}
	return ds
}

// TestDueFloorWithAConcurrentWriter: a scan from the start racing writes
// below everything never raises the floor above a written entry: after
// the writer stops, the scan from the start returns the lowest one.
func TestDueFloorWithAConcurrentWriter(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	require.NoError(t, s.Set("top", val(at(100_000), "")))
	const n = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if err := s.Set(keyN(i), val(at(n-i), "")); err != nil {
				panic(err)
			}
		}
	}()
	for scanning := true; scanning; {
		select {
		case <-done:
			scanning = false
		default:
		}
		_, err := s.DueUpTo(maxTime, Due{}, 1)
		require.NoError(t, err)
	}
	got, err := s.DueUpTo(maxTime, Due{}, 1)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(1), Key: keyN(n - 1)}}, got)
}
