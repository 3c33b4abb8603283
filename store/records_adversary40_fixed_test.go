package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// edgeKeys are table keys around the prefix's edges and each other's.
var edgeKeys = []string{"", "\x00", "\x00\x00", "\x01", "a", "a\x00", "a\x00\x00", "a\x01", "ab", "ab\xff",
	"\xfe", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff", "shard", "shard\x00", "shard-0", "t", "tt", "u"}

// TestAdversary40RecordsEdgeKeys compares Records.GetMany with Get for
// keys at the table prefix's edges, empty values, deleted keys, the
// cached key (Options.CachedKey), groups in descending order, duplicates
// and many groups through one reader, over memtables and flushed files,
// with an indexer (index entries sort around the table's keys).
func TestAdversary40RecordsEdgeKeys(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 40))
		s := New("db", Options{FS: vfs.NewMem(), Indexer: testIndexer, CachedKey: "shard", Logger: quiet})
		require.NoError(t, s.Open())
		pool := append(slices.Clone(edgeKeys), func() []string {
			var ks []string
			for i := range 40 {
				ks = append(ks, fmt.Sprintf("j%03d", i))
			}
			return ks
		}()...)
		for n := range 400 {
			k := pool[rng.IntN(len(pool))]
			switch rng.IntN(6) {
			case 0:
				require.NoError(t, s.Delete(k))
			case 1:
				require.NoError(t, s.Set(k, []byte{}))
			case 2:
				require.NoError(t, s.Set(k, val(at(rng.IntN(100)), fmt.Sprint("b", rng.IntN(3)))))
			case 3:
				require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: at(rng.IntN(100))}}, at(n)))
			default:
				require.NoError(t, s.Set(k, []byte(fmt.Sprint(n))))
			}
			if rng.IntN(100) == 0 {
				require.NoError(t, s.db.Flush())
			}
			if rng.IntN(7) == 0 {
				_, err := s.Get("shard") // fills the cache
				require.NoError(t, err)
			}
		}
		r, err := s.Records()
		require.NoError(t, err)
		want := map[string][]byte{}
		for _, k := range pool {
			v, err := s.Get(k)
			require.NoError(t, err)
			want[k] = v
		}
		for g := range 60 {
			var keys []string
			for range rng.IntN(20) {
				keys = append(keys, pool[rng.IntN(len(pool))])
			}
			switch g % 3 {
			case 0:
				slices.Sort(keys)
				slices.Reverse(keys)
			case 1:
				slices.Sort(keys)
			}
			got, err := r.GetMany(keys)
			require.NoError(t, err)
			for i, k := range keys {
				require.Equal(t, want[k], got[i], "seed %d group %d key %q", seed, g, k)
				require.Equal(t, want[k] == nil, got[i] == nil, "seed %d key %q: missing vs empty", seed, k)
			}
			// writes after the reader opened are not seen
			k := pool[rng.IntN(len(pool))]
			require.NoError(t, s.Set(k, []byte("later")))
		}
		r.Close()
		require.NoError(t, s.Close())
	}
}

// TestAdversary40RecordsDuringRecovery: a Records opened while a recovery
// batches its writes (fresh store, deferred indexing) sees the batch
// written so far (acquire commits it), and nothing batched after.
func TestAdversary40RecordsDuringRecovery(t *testing.T) {
	fs := vfs.NewMem()
	s := New("db", Options{FS: fs, Indexer: testIndexer, Logger: quiet})
	require.NoError(t, s.Open())
	for i := range 100 {
		require.NoError(t, s.Set(keyN(i), val(at(i), "")))
	}
	r, err := s.Records()
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, s.Set(keyN(i), val(at(i+1000), "")))
	}
	keys := []string{}
	for i := range 100 {
		keys = append(keys, keyN(i))
	}
	got, err := r.GetMany(keys)
	require.NoError(t, err)
	for i, v := range got {
		require.Equal(t, string(val(at(i), "")), string(v), "key %d", i)
	}
	r.Close()
	require.NoError(t, s.MarkRecovered())
	checkConsistent(t, s)
	got, err = s.GetMany(keys)
	require.NoError(t, err)
	for i, v := range got {
		require.Equal(t, string(val(at(i+1000), "")), string(v), "key %d", i)
	}
	require.NoError(t, s.Close())
}
