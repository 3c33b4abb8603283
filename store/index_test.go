package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func dueKeys(ds []Due) []string {
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = d.Key
	}
	return keys
}

func TestIndexSetMovesAndRemoves(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})

	require.NoError(t, s.Set("a", val(at(10), "b1")))
	due, err := s.DueOf("a")
	require.NoError(t, err)
	require.True(t, at(10).Equal(due))
	require.Equal(t, time.UTC, due.Location())
	keys, err := s.BucketKeys("b1", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys)

	// Move due and bucket.
	require.NoError(t, s.Set("a", val(at(20), "b2")))
	ds, err := s.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(20), Key: "a"}}, ds)
	keys, err = s.BucketKeys("b1", "", 0)
	require.NoError(t, err)
	require.Empty(t, keys)
	keys, err = s.BucketKeys("b2", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys)
	checkConsistent(t, s)

	// Remove due, keep bucket.
	require.NoError(t, s.Set("a", val(time.Time{}, "b2")))
	ds, err = s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, ds)
	due, err = s.DueOf("a")
	require.NoError(t, err)
	require.True(t, due.IsZero())
	keys, err = s.BucketKeys("b2", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys)
	checkConsistent(t, s)

	// Remove everything: the reverse entry goes too.
	require.NoError(t, s.Set("a", []byte("opaque")))
	keys, err = s.BucketKeys("b2", "", 0)
	require.NoError(t, err)
	require.Empty(t, keys)
	require.Empty(t, rawScan(t, s, prefixReverse))
	checkConsistent(t, s)

	// Re-add, then Delete removes all entries.
	require.NoError(t, s.Set("a", val(at(5), "b3")))
	require.NoError(t, s.Delete("a"))
	require.Empty(t, rawScan(t, s, prefixDue))
	require.Empty(t, rawScan(t, s, prefixBucket))
	require.Empty(t, rawScan(t, s, prefixReverse))
	st, err := s.Stats()
	require.NoError(t, err)
	require.Equal(t, Stats{}, st)
}

func TestIndexerErrorLeavesStoreUnchanged(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	require.NoError(t, s.Set("a", val(at(1), "b")))
	require.Error(t, s.Set("a", []byte("notanumber|b|x")))
	v, err := s.Get("a")
	require.NoError(t, err)
	require.Equal(t, val(at(1), "b"), v)
	checkConsistent(t, s)
}

func TestIndexerReadsOtherRecords(t *testing.T) {
	t.Parallel()
	// The due time is the record's time or the watermark, whichever is later.
	indexer := func(r Reader, key string, value []byte) (Entry, error) {
		if key == "watermark" {
			return Entry{}, nil
		}
		e, err := testIndexer(r, key, value)
		if err != nil || e.Due.IsZero() {
			return e, err
		}
		wm, err := r.Get("watermark")
		if err != nil {
			return Entry{}, err
		}
		if wm != nil {
			w, _ := testIndexer(r, "", wm)
			if w.Due.After(e.Due) {
				e.Due = w.Due
			}
		}
		return e, nil
	}
	s := newMemStore(t, Options{Indexer: indexer})
	require.NoError(t, s.Set("watermark", val(at(50), "")))
	require.NoError(t, s.Set("a", val(at(10), "")))
	require.NoError(t, s.Set("b", val(at(60), "")))
	due, err := s.DueOf("a")
	require.NoError(t, err)
	require.True(t, at(50).Equal(due))
	before := dumpIndexes(t, s)
	require.NoError(t, s.RebuildIndexes(at(1)))
	require.Equal(t, before, dumpIndexes(t, s))
}

func TestDueUpToOrderLimitCursor(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	pre1970 := time.Date(1950, 6, 1, 0, 0, 0, 0, time.UTC)
	entries := []Due{
		{pre1970, "old"},
		{time.Unix(0, -1).UTC(), "just-before-epoch"},
		{time.Unix(0, 0).UTC(), "epoch"},
		{at(1), "b"},
		{at(1), "a"},
		{at(1), "a\x00"},
		{at(1), ""},
		{at(2), "c"},
		{at(2).Add(time.Nanosecond), "d"},
		{at(3), "e"},
	}
	for _, e := range entries {
		require.NoError(t, s.Set(e.Key, val(e.At, "")))
	}
	want := []string{"old", "just-before-epoch", "epoch", "", "a", "a\x00", "b", "c", "d", "e"}
	all, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, want, dueKeys(all))
	for i := range all {
		if i > 0 {
			require.False(t, all[i].At.Before(all[i-1].At))
		}
	}

	// upTo is inclusive, at nanosecond precision.
	ds, err := s.DueUpTo(at(2), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, want[:8], dueKeys(ds))
	ds, err = s.DueUpTo(at(2).Add(time.Nanosecond), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, want[:9], dueKeys(ds))
	ds, err = s.DueUpTo(pre1970.Add(-time.Nanosecond), Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, ds)
	ds, err = s.DueUpTo(time.Time{}, Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, ds)

	// Pagination with limit and cursor gives the same sequence.
	for _, limit := range []int{1, 2, 3, 7, 100} {
		var got []Due
		cursor := Due{}
		for {
			page, err := s.DueUpTo(at(3), cursor, limit)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), limit)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			cursor = page[len(page)-1]
		}
		require.Equal(t, all, got, "limit %d", limit)
	}

	// The cursor is strictly exclusive, also for an entry that no longer exists.
	ds, err = s.DueUpTo(maxTime, Due{At: at(1), Key: "a"}, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"a\x00", "b"}, dueKeys(ds))
	ds, err = s.DueUpTo(maxTime, Due{At: at(1), Key: "aa"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e"}, dueKeys(ds))
}

func TestApplyMoves(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	upTo, err := s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, upTo.IsZero())

	require.NoError(t, s.Set("a", val(at(1), "b1")))
	require.NoError(t, s.Set("b", val(at(2), "")))
	require.NoError(t, s.Set("c", val(time.Time{}, ""))) // record without index entries
	require.NoError(t, s.Set("d", val(at(4), "")))

	require.NoError(t, s.ApplyMoves([]Move{
		{Key: "a", To: at(10)},
		{Key: "b", To: time.Time{}},     // remove
		{Key: "c", To: at(3)},           // add
		{Key: "d", To: at(7)},           // moved twice: last wins
		{Key: "d", To: at(8)},           //
		{Key: "ghost", To: at(1)},       // not in the table: skipped
		{Key: "never", To: time.Time{}}, // not in the table: skipped
	}, at(5)))
	checkConsistent(t, s)

	ds, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{at(3), "c"}, {at(8), "d"}, {at(10), "a"}}, ds)
	keys, err := s.BucketKeys("b1", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys, "moves keep the bucket")
	upTo, err = s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, at(5).Equal(upTo))

	// Moves are local: the table is unchanged.
	v, err := s.Get("a")
	require.NoError(t, err)
	require.Equal(t, val(at(1), "b1"), v)

	// A later Set re-derives the entry from the value.
	require.NoError(t, s.Set("a", val(at(2), "b1")))
	due, err := s.DueOf("a")
	require.NoError(t, err)
	require.True(t, at(2).Equal(due))

	// Delete after a move removes the moved entry.
	require.NoError(t, s.Delete("d"))
	checkConsistent(t, s)
	st, err := s.Stats()
	require.NoError(t, err)
	require.Equal(t, Stats{Records: 3, DueEntries: 2}, st)

	// Empty move list still stores indexedUpTo; zero time is stored as zero.
	require.NoError(t, s.ApplyMoves(nil, at(9)))
	upTo, err = s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, at(9).Equal(upTo))
	require.NoError(t, s.ApplyMoves(nil, time.Time{}))
	upTo, err = s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, upTo.IsZero())
}

func TestMovesWithoutIndexer(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{})
	require.NoError(t, s.Set("a", val(at(1), "b")))
	ds, err := s.DueUpTo(maxTime, Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, ds, "no Indexer: no entries from Set")
	require.NoError(t, s.ApplyMoves([]Move{{Key: "a", To: at(3)}}, at(1)))
	due, err := s.DueOf("a")
	require.NoError(t, err)
	require.True(t, at(3).Equal(due))
	require.NoError(t, s.Delete("a"))
	checkConsistent(t, s)
	require.Empty(t, rawScan(t, s, prefixDue))
}

func TestBucketKeysPagination(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	// Buckets that are prefixes of each other, and keys with 0x00 bytes.
	buckets := []string{"a", "a\x00", "ab", "a\x00b", "\xff"}
	want := map[string][]string{}
	for i := 0; i < 60; i++ {
		b := buckets[i%len(buckets)]
		k := fmt.Sprintf("k%02d", i)
		if i%4 == 0 {
			k += "\x00x"
		}
		require.NoError(t, s.Set(k, val(time.Time{}, b)))
		want[b] = append(want[b], k)
	}
	for _, b := range buckets {
		all, err := s.BucketKeys(b, "", 0)
		require.NoError(t, err)
		require.Equal(t, want[b], all, "bucket %q", b)
		for _, limit := range []int{1, 5, 100} {
			var got []string
			after := ""
			for {
				page, err := s.BucketKeys(b, after, limit)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page), limit)
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				after = page[len(page)-1]
			}
			require.Equal(t, want[b], got, "bucket %q limit %d", b, limit)
		}
	}
	keys, err := s.BucketKeys("missing", "", 0)
	require.NoError(t, err)
	require.Empty(t, keys)
	keys, err = s.BucketKeys("a", "k05", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"k10", "k15"}, keys)
}

// randomOps applies random Sets, Deletes and ApplyMoves with keys in [0, nKeys).
func randomOps(t testing.TB, s *Store, rng *rand.Rand, n, nKeys int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := keyN(rng.IntN(nKeys))
		switch r := rng.IntN(10); {
		case r < 6:
			var due time.Time
			if rng.IntN(4) > 0 {
				due = at(rng.IntN(1000) - 100)
			}
			bucket := ""
			if rng.IntN(3) > 0 {
				bucket = fmt.Sprint("bucket-", rng.IntN(5))
			}
			require.NoError(t, s.Set(k, val(due, bucket)))
		case r < 8:
			require.NoError(t, s.Delete(k))
		default:
			require.NoError(t, s.ApplyMoves([]Move{{Key: k, To: at(rng.IntN(1000))}}, at(i)))
		}
	}
}

func TestRebuildIndexesMatchesIncremental(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	rng := rand.New(rand.NewPCG(1, 2))
	// Sets and Deletes only (moves are local overrides a rebuild drops).
	for i := 0; i < 3000; i++ {
		k := keyN(rng.IntN(10000))
		if rng.IntN(5) == 0 {
			require.NoError(t, s.Delete(k))
			continue
		}
		var due time.Time
		if rng.IntN(4) > 0 {
			due = at(rng.IntN(100000) - 1000)
		}
		bucket := ""
		if rng.IntN(3) > 0 {
			bucket = fmt.Sprint("bucket-", rng.IntN(7))
		}
		require.NoError(t, s.Set(k, val(due, bucket)))
	}
	checkConsistent(t, s)
	want := dumpIndexes(t, s)
	require.NotEmpty(t, want.Due)
	require.NotEmpty(t, want.Buckets)

	// Corrupt the index: stray entries, moved entries, dropped entries.
	b := s.db.NewBatch()
	require.NoError(t, b.Set(dueKey(nanos(at(5)), "stray"), nil, nil))
	require.NoError(t, b.Set(bucketKey("bucket-1", "stray"), nil, nil))
	require.NoError(t, b.DeleteRange([]byte{prefixBucket}, []byte{prefixBucket + 1}, nil))
	require.NoError(t, b.Commit(nil))
	require.NoError(t, b.Close())
	var moves []Move
	for i, d := range want.Due {
		if i%3 == 0 {
			moves = append(moves, Move{Key: d.Key, To: d.At.Add(time.Hour)})
		}
	}
	require.NoError(t, s.ApplyMoves(moves, at(1)))
	require.NotEqual(t, want, dumpIndexes(t, s))

	require.NoError(t, s.RebuildIndexes(at(77)))
	require.Equal(t, want, dumpIndexes(t, s))
	checkConsistent(t, s)
	upTo, err := s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, at(77).Equal(upTo))
	v, err := s.getRaw(metaKey(metaRebuilding))
	require.NoError(t, err)
	require.Nil(t, v)

	// Rebuilding from scratch (all indexes dropped) gives the same result.
	b = s.db.NewBatch()
	for _, p := range []byte{prefixDue, prefixBucket, prefixReverse} {
		require.NoError(t, b.DeleteRange([]byte{p}, []byte{p + 1}, nil))
	}
	require.NoError(t, b.Commit(nil))
	require.NoError(t, b.Close())
	require.NoError(t, s.RebuildIndexes(at(78)))
	require.Equal(t, want, dumpIndexes(t, s))
}

func TestInterruptedRebuildRedoneOnOpen(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), fmt.Sprint("b", i%3))))
	}
	want := dumpIndexes(t, s)
	// Simulate a crash in the middle of a rebuild: indexes dropped, flag set.
	b := s.db.NewBatch()
	for _, p := range []byte{prefixDue, prefixBucket, prefixReverse} {
		require.NoError(t, b.DeleteRange([]byte{p}, []byte{p + 1}, nil))
	}
	require.NoError(t, b.Set(metaKey(metaRebuilding), []byte{1}, nil))
	require.NoError(t, b.Commit(nil))
	require.NoError(t, b.Close())

	s = reopen(t, s)
	require.Equal(t, want, dumpIndexes(t, s))
	v, err := s.getRaw(metaKey(metaRebuilding))
	require.NoError(t, err)
	require.Nil(t, v)
}

func TestReopenKeepsTableOffsetAndIndexes(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	randomOps(t, s, rand.New(rand.NewPCG(3, 4)), 2000, 300)
	require.NoError(t, s.SetOffset(1234))
	require.NoError(t, s.ApplyMoves([]Move{{Key: keyN(1), To: at(1)}}, at(999)))
	table := tableState(t, s)
	idx := dumpIndexes(t, s)
	stats, err := s.Stats()
	require.NoError(t, err)
	require.Equal(t, int64(len(table)), stats.Records)
	require.Equal(t, int64(len(idx.Due)), stats.DueEntries)

	s = reopen(t, s)
	require.Equal(t, table, tableState(t, s))
	require.Equal(t, idx, dumpIndexes(t, s))
	off, err := s.GetOffset(0)
	require.NoError(t, err)
	require.Equal(t, int64(1234), off)
	upTo, err := s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, at(999).Equal(upTo))
	checkConsistent(t, s)
}

func TestIndexVersionChangeRebuildsOnOpen(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	for i := 0; i < 20; i++ {
		require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
	}
	want := dumpIndexes(t, s)
	// An older index format: stale entries that the rebuild must drop.
	require.NoError(t, s.db.Set(metaKey(metaVersion), []byte("0"), nil))
	require.NoError(t, s.db.Set(dueKey(nanos(at(1)), "stale"), nil, nil))
	s = reopen(t, s)
	require.Equal(t, want, dumpIndexes(t, s))
	v, err := s.getRaw(metaKey(metaVersion))
	require.NoError(t, err)
	require.Equal(t, indexVersion, string(v))
}

// TestRebuildInRunsMatchesIncremental: a rebuild whose due and bucket
// entries take many sorted runs (many overlapping sstables ingested at
// once) gives back the index the records' own writes kept, leaves no
// build files behind, and the store keeps indexing writes after it.
func TestRebuildInRunsMatchesIncremental(t *testing.T) {
	old := indexBuildRunBytes
	indexBuildRunBytes = 2 << 10
	t.Cleanup(func() { indexBuildRunBytes = old })
	for seed := uint64(1); seed <= 4; seed++ {
		s := newMemStore(t, Options{Indexer: testIndexer})
		rng := rand.New(rand.NewPCG(seed, 9))
		for i := 0; i < 2000; i++ {
			k := keyN(rng.IntN(5000))
			if rng.IntN(6) == 0 {
				require.NoError(t, s.Delete(k))
				continue
			}
			var due time.Time
			if rng.IntN(4) > 0 {
				due = at(rng.IntN(100) - 10) // many keys share a time
			}
			bucket := ""
			if rng.IntN(2) > 0 {
				bucket = fmt.Sprint("bucket-", rng.IntN(4))
			}
			require.NoError(t, s.Set(k, val(due, bucket)))
		}
		want := dumpIndexes(t, s)
		require.NoError(t, s.RebuildIndexes(at(5)))
		require.Equal(t, want, dumpIndexes(t, s), "seed %d", seed)
		checkConsistent(t, s)
		_, err := s.fs().Stat(s.fs().PathJoin(s.dir, indexBuildDir))
		require.True(t, os.IsNotExist(err), "the build's files are left: %v", err)
		// Writes after the rebuild move, add and drop entries as before.
		randomOps(t, s, rng, 500, 5000)
		checkConsistent(t, s)
		s = reopen(t, s)
		checkConsistent(t, s)
	}
}
