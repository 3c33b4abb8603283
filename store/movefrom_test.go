package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMovesFromTheScanMatchLookedUpMoves: moves that carry what the
// caller's scan saw (From, Bucket) leave exactly the indexes that the same
// moves looked up through the reverse entries leave, over generated
// histories of puts, deletes and fan-out rounds (a scan, then moves to a
// later time, to none, or twice for one key in a batch).
func TestMovesFromTheScanMatchLookedUpMoves(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 0xf10))
		told := newMemStore(t, Options{Indexer: testIndexer})
		looked := newMemStore(t, Options{Indexer: testIndexer})
		nKeys := 1 + rng.IntN(60)
		for round := range 30 {
			for range rng.IntN(20) {
				k := keyN(rng.IntN(nKeys))
				if rng.IntN(5) == 0 {
					require.NoError(t, told.Delete(k))
					require.NoError(t, looked.Delete(k))
					continue
				}
				v := val(at(rng.IntN(600)), []string{"", "b1", "b2"}[rng.IntN(3)])
				require.NoError(t, told.Set(k, v))
				require.NoError(t, looked.Set(k, v))
			}
			upTo := at(round * 20)
			due, err := told.DueUpTo(upTo, Due{}, 1+rng.IntN(40))
			require.NoError(t, err)
			var withFrom, without []Move
			for _, d := range due {
				v, err := told.Get(d.Key)
				require.NoError(t, err)
				e, err := testIndexer(nil, d.Key, v)
				require.NoError(t, err)
				var to time.Time
				if rng.IntN(6) > 0 {
					to = d.At.Add(time.Duration(1+rng.IntN(300)) * time.Second)
				}
				withFrom = append(withFrom, Move{Key: d.Key, To: to, From: d.At, Bucket: e.Bucket})
				without = append(without, Move{Key: d.Key, To: to})
				if rng.IntN(8) == 0 { // moved again in the same batch: the last move wins
					again := d.At.Add(time.Duration(rng.IntN(900)) * time.Second)
					withFrom = append(withFrom, Move{Key: d.Key, To: again, From: d.At, Bucket: e.Bucket})
					without = append(without, Move{Key: d.Key, To: again})
				}
			}
			require.NoError(t, told.ApplyMoves(withFrom, upTo))
			require.NoError(t, looked.ApplyMoves(without, upTo))
			checkConsistent(t, told)
			require.Equal(t, dumpIndexes(t, looked), dumpIndexes(t, told), "seed %d round %d", seed, round)
		}
	}
}

// TestMovesFromIgnoredAfterADeferredIndexIsBuilt: a move's From describes
// the index its caller scanned; when ApplyMoves first builds an index a
// deferred recovery left unbuilt, the entries are looked up instead, so a
// From that the built index does not hold leaves no stray entry.
func TestMovesFromIgnoredAfterADeferredIndexIsBuilt(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer, DeferIndexOnRecovery: true})
	require.NoError(t, s.Set("a", val(at(5), "b1")))
	require.NoError(t, s.ApplyMoves([]Move{{Key: "a", To: at(50), From: at(1), Bucket: "other"}}, at(10)))
	checkConsistent(t, s)
	due, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(50), Key: "a"}}, due)
	keys, err := s.BucketKeys("b1", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys)
}
