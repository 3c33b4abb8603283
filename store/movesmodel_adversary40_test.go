package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

type modelEntry struct {
	due    time.Time // zero: none
	bucket string
}

// modelIndex is the index the model says: due entries in (time, key)
// order, and the bucket entries.
func modelIndex(m map[string]modelEntry) indexState {
	st := indexState{Buckets: map[string][]string{}}
	for k, e := range m {
		if !e.due.IsZero() {
			st.Due = append(st.Due, Due{At: e.due.UTC(), Key: k})
		}
		if e.bucket != "" {
			st.Buckets[e.bucket] = append(st.Buckets[e.bucket], k)
		}
	}
	sort.Slice(st.Due, func(i, j int) bool { return st.Due[i].NotAfter(st.Due[j]) && st.Due[i] != st.Due[j] })
	for _, ks := range st.Buckets {
		sort.Strings(ks)
	}
	return st
}

// TestAdversary40MovesMatchModel applies random Sets, Deletes, ApplyMoves
// (keys moved several times in one batch, moves to zero, keys not in the
// table, trusted Froms) and ApplyScannedMoves (a real scan's span, with
// range deletions from 1 move up, extra moves outside the span and
// duplicates) and compares the due and bucket indexes with a model after
// every operation; half the seeds start as a deferred-index recovery.
// CHRONOS_ADV40_SEEDS / CHRONOS_ADV40_OPS set the seeds and operations.
func TestAdversary40MovesMatchModel(t *testing.T) {
	seeds, ops := 40, 400
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_ADV40_SEEDS")); err == nil {
		seeds = v
	}
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_ADV40_OPS")); err == nil {
		ops = v
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 4040))
		fs := vfs.NewMem()
		s := New("db", Options{FS: fs, Indexer: testIndexer, Logger: quiet})
		s.minSpan = 1 + int(seed%3)
		require.NoError(t, s.Open())
		m := map[string]modelEntry{}
		const nKeys = 60
		key := func() string { return keyN(rng.IntN(nKeys)) }
		randEntry := func() modelEntry {
			var e modelEntry
			if rng.IntN(4) > 0 {
				e.due = at(rng.IntN(200))
			}
			if rng.IntN(3) > 0 {
				e.bucket = fmt.Sprint("bk", rng.IntN(4))
			}
			return e
		}
		recovering := seed%2 == 1
		if recovering {
			// A fresh store's recovery: table writes only, the index built
			// at the first moves or MarkRecovered.
			for range 100 {
				k, e := key(), randEntry()
				require.NoError(t, s.Set(k, val(e.due, e.bucket)))
				m[k] = e
			}
		}
		for op := range ops {
			msg := fmt.Sprintf("seed %d op %d", seed, op)
			switch r := rng.IntN(10); {
			case r < 3:
				k, e := key(), randEntry()
				require.NoError(t, s.Set(k, val(e.due, e.bucket)), msg)
				m[k] = e
			case r < 4:
				k := key()
				require.NoError(t, s.Delete(k), msg)
				delete(m, k)
			case r < 7:
				var moves []Move
				for range 1 + rng.IntN(12) {
					k := key()
					if rng.IntN(8) == 0 {
						k = "ghost-" + k
					}
					mv := Move{Key: k}
					if rng.IntN(4) > 0 {
						mv.To = at(rng.IntN(200))
					}
					moves = append(moves, mv)
				}
				require.NoError(t, s.ApplyMoves(moves, at(op)), msg)
				for _, mv := range moves {
					if e, ok := m[mv.Key]; ok {
						e.due = mv.To
						m[mv.Key] = e
					}
				}
			default:
				// A scan of the due index after a cursor, as a chunk makes.
				upTo := at(rng.IntN(220))
				var after Due
				if rng.IntN(2) == 0 {
					after = Due{At: at(rng.IntN(200)), Key: key()}
				}
				due, err := s.DueUpTo(upTo, after, 1+rng.IntN(15))
				require.NoError(t, err, msg)
				if len(due) == 0 {
					continue
				}
				var moves []Move
				for _, d := range due {
					e := m[d.Key]
					require.True(t, e.due.Equal(d.At), "%s: scan says %v at %v, model %v", msg, d.Key, d.At, e.due)
					mv := Move{Key: d.Key, From: d.At, Bucket: e.bucket}
					switch rng.IntN(4) {
					case 0: // removed
					case 1: // stays (same time)
						mv.To = d.At
					default:
						mv.To = at(rng.IntN(220))
					}
					moves = append(moves, mv)
					if rng.IntN(6) == 0 { // moved again in the same batch
						moves = append(moves, Move{Key: d.Key, To: at(rng.IntN(220))})
					}
				}
				for range rng.IntN(3) { // others, looked up (in the span or not)
					mv := Move{Key: key()}
					if rng.IntN(3) > 0 {
						mv.To = at(rng.IntN(220))
					}
					moves = append(moves, mv)
				}
				require.NoError(t, s.ApplyScannedMoves(moves, due[0], due[len(due)-1], upTo), msg)
				for _, mv := range moves {
					if e, ok := m[mv.Key]; ok {
						e.due = mv.To
						m[mv.Key] = e
					}
				}
			}
			if recovering && op == ops/2 {
				require.NoError(t, s.MarkRecovered(), msg)
			}
			if rng.IntN(50) == 0 {
				require.NoError(t, s.db.Flush())
			}
			got := dumpIndexes(t, s)
			want := modelIndex(m)
			if len(got.Due) == 0 {
				got.Due = nil
			}
			for b, ks := range got.Buckets {
				if len(ks) == 0 {
					delete(got.Buckets, b)
				}
			}
			require.Equal(t, want, got, msg)
			if op%25 == 0 {
				checkConsistent(t, s)
			}
		}
		checkConsistent(t, s)
		// A rebuild from the table gives the table's entries; the moves
		// were local. Reopen too.
		s = reopen(t, s)
		require.Equal(t, modelIndex(m), func() indexState {
			st := dumpIndexes(t, s)
			if len(st.Due) == 0 {
				st.Due = nil
			}
			return st
		}(), "seed %d after reopen", seed)
		require.NoError(t, s.Close())
	}
}
