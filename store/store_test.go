package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

func TestGetHasSetDelete(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{})

	has, err := s.Has("key-1")
	require.NoError(t, err)
	require.False(t, has)
	v, err := s.Get("key-1")
	require.NoError(t, err)
	require.Nil(t, v)

	require.NoError(t, s.Set("key-1", []byte("content-1")))
	has, err = s.Has("key-1")
	require.NoError(t, err)
	require.True(t, has)
	v, err = s.Get("key-1")
	require.NoError(t, err)
	require.Equal(t, []byte("content-1"), v)

	require.NoError(t, s.Set("key-1", []byte("content-2")))
	v, err = s.Get("key-1")
	require.NoError(t, err)
	require.Equal(t, []byte("content-2"), v)

	require.NoError(t, s.Delete("key-1"))
	has, err = s.Has("key-1")
	require.NoError(t, err)
	require.False(t, has)
	v, err = s.Get("key-1")
	require.NoError(t, err)
	require.Nil(t, v)

	// Deleting a missing key is fine.
	require.NoError(t, s.Delete("never-there"))

	// Empty (and nil) values exist, like in goka's leveldb storage.
	require.NoError(t, s.Set("empty", nil))
	has, err = s.Has("empty")
	require.NoError(t, err)
	require.True(t, has)
	v, err = s.Get("empty")
	require.NoError(t, err)
	require.NotNil(t, v)
	require.Empty(t, v)

	// Binary keys, including 0x00 and 0xff.
	for _, k := range []string{"", "\x00", "a\x00b", "\xff\xff"} {
		require.NoError(t, s.Set(k, []byte("v"+k)))
		v, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, []byte("v"+k), v)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{})
	require.NoError(t, s.Set("k", []byte("abc")))
	v, err := s.Get("k")
	require.NoError(t, err)
	v[0] = 'X'
	v2, err := s.Get("k")
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), v2)
}

func fillKV(t *testing.T, s *Store) map[string]string {
	kv := map[string]string{"key-1": "val-1", "key-2": "val-2", "key-3": "val-3"}
	for k, v := range kv {
		require.NoError(t, s.Set(k, []byte(v)))
	}
	return kv
}

func TestIterator(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	kv := fillKV(t, s)
	require.NoError(t, s.Set("key-4", val(at(1), "bkt"))) // creates index entries
	kv["key-4"] = string(val(at(1), "bkt"))
	require.NoError(t, s.SetOffset(777))
	require.NoError(t, s.MarkRecovered()) // offset persisted under a meta key
	require.NoError(t, s.ApplyMoves(nil, at(5)))

	// A released iterator is exhausted.
	it, err := s.Iterator()
	require.NoError(t, err)
	it.Release()
	require.False(t, it.Next())
	require.False(t, it.Seek([]byte("key-2")))
	require.Nil(t, it.Key())
	it.Release() // idempotent

	it, err = s.Iterator()
	require.NoError(t, err)
	defer it.Release()
	// Before Next, Key and Value are nil.
	require.Nil(t, it.Key())
	v, err := it.Value()
	require.NoError(t, err)
	require.Nil(t, v)

	i := 1
	for it.Next() {
		v, err := it.Value()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("key-%d", i), string(it.Key()))
		require.Equal(t, kv[string(it.Key())], string(v))
		i++
	}
	require.NoError(t, it.Err())
	require.Equal(t, 5, i, "only table keys, no meta or index keys")
	require.Nil(t, it.Key())
	v, err = it.Value()
	require.NoError(t, err)
	require.Nil(t, v)
	require.False(t, it.Next())

	// Seek positions at the first key >= the given key.
	it2, err := s.Iterator()
	require.NoError(t, err)
	defer it2.Release()
	require.True(t, it2.Seek([]byte("key-2")))
	require.Equal(t, []byte("key-2"), it2.Key())
	v, err = it2.Value()
	require.NoError(t, err)
	require.Equal(t, []byte("val-2"), v)
	require.True(t, it2.Next())
	require.Equal(t, []byte("key-3"), it2.Key())
	require.True(t, it2.Seek([]byte("key-0")))
	require.Equal(t, []byte("key-1"), it2.Key())
	require.True(t, it2.Seek([]byte("key-25")))
	require.Equal(t, []byte("key-3"), it2.Key())
	require.False(t, it2.Seek([]byte("key-5")))
	require.Nil(t, it2.Key())
}

func TestIteratorIsSnapshot(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{})
	fillKV(t, s)
	it, err := s.Iterator()
	require.NoError(t, err)
	defer it.Release()
	require.NoError(t, s.Set("key-0", []byte("new")))
	require.NoError(t, s.Delete("key-2"))
	require.NoError(t, s.Set("key-3", []byte("changed")))
	var keys, vals []string
	for it.Next() {
		v, err := it.Value()
		require.NoError(t, err)
		keys = append(keys, string(it.Key()))
		vals = append(vals, string(v))
	}
	require.Equal(t, []string{"key-1", "key-2", "key-3"}, keys)
	require.Equal(t, []string{"val-1", "val-2", "val-3"}, vals)
}

func TestIteratorWithRange(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{})
	for _, k := range []string{"a", "b", "b1", "b2", "ba", "c", "c\x00", "d"} {
		require.NoError(t, s.Set(k, []byte("v-"+k)))
	}
	require.NoError(t, s.SetOffset(5))
	require.NoError(t, s.MarkRecovered())

	collect := func(start, limit []byte) []string {
		it, err := s.IteratorWithRange(start, limit)
		require.NoError(t, err)
		defer it.Release()
		var keys []string
		for it.Next() {
			keys = append(keys, string(it.Key()))
		}
		require.NoError(t, it.Err())
		return keys
	}
	all := []string{"a", "b", "b1", "b2", "ba", "c", "c\x00", "d"}
	require.Equal(t, all, collect(nil, nil))
	require.Equal(t, all, collect([]byte{}, []byte{}))
	// Half-open [start, limit).
	require.Equal(t, []string{"b", "b1", "b2", "ba"}, collect([]byte("b"), []byte("c")))
	require.Equal(t, []string{"b1", "b2", "ba", "c"}, collect([]byte("b1"), []byte("c\x00")))
	require.Equal(t, []string{"a", "b", "b1"}, collect(nil, []byte("b2")))
	require.Empty(t, collect([]byte("c"), []byte("c")))
	// Empty limit: prefix iteration over start (goka's leveldb behaviour).
	require.Equal(t, []string{"b", "b1", "b2", "ba"}, collect([]byte("b"), nil))
	require.Equal(t, []string{"c", "c\x00"}, collect([]byte("c"), []byte{}))
	require.Empty(t, collect([]byte("x"), nil))

	// First key of a range, as in goka's memory storage test.
	it, err := s.IteratorWithRange([]byte("b1"), nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	require.Equal(t, []byte("b1"), it.Key())
	require.False(t, it.Next())
	it.Release()

	// Seek stays within the range.
	it, err = s.IteratorWithRange([]byte("b"), []byte("c"))
	require.NoError(t, err)
	defer it.Release()
	require.True(t, it.Seek([]byte("a")))
	require.Equal(t, []byte("b"), it.Key())
	require.True(t, it.Seek([]byte("b15")))
	require.Equal(t, []byte("b2"), it.Key())
	require.True(t, it.Next())
	require.Equal(t, []byte("ba"), it.Key())
	require.False(t, it.Next())
	require.False(t, it.Seek([]byte("c")))
	require.Nil(t, it.Key())
}

func TestOffsets(t *testing.T) {
	t.Parallel()
	t.Run("getset", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, Options{})
		off, err := s.GetOffset(0)
		require.NoError(t, err)
		require.Equal(t, int64(0), off)
		off, err = s.GetOffset(-2)
		require.NoError(t, err)
		require.Equal(t, int64(-2), off)
		require.NoError(t, s.SetOffset(100))
		off, err = s.GetOffset(0)
		require.NoError(t, err)
		require.Equal(t, int64(100), off)
	})
	t.Run("not-persisted-before-recovered", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, Options{})
		require.NoError(t, s.SetOffset(100))
		v, err := s.getRaw(metaKey(metaOffset))
		require.NoError(t, err)
		require.Nil(t, v)
		require.NoError(t, s.MarkRecovered())
		v, err = s.getRaw(metaKey(metaOffset))
		require.NoError(t, err)
		require.Equal(t, "100", string(v))
		require.NoError(t, s.SetOffset(101))
		v, err = s.getRaw(metaKey(metaOffset))
		require.NoError(t, err)
		require.Equal(t, "101", string(v))
		off, err := s.GetOffset(0)
		require.NoError(t, err)
		require.Equal(t, int64(101), off)
	})
	t.Run("set-reopen", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, Options{})
		require.NoError(t, s.SetOffset(100))
		s = reopen(t, s)
		off, err := s.GetOffset(0)
		require.NoError(t, err)
		require.Equal(t, int64(100), off)
	})
	t.Run("mark-recovered-reopen", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, Options{})
		require.NoError(t, s.SetOffset(100))
		require.NoError(t, s.MarkRecovered())
		require.NoError(t, s.SetOffset(101))
		s = reopen(t, s)
		off, err := s.GetOffset(0)
		require.NoError(t, err)
		require.Equal(t, int64(101), off)
	})
}

func TestClosedAndNotOpen(t *testing.T) {
	t.Parallel()
	s := New("/db", Options{FS: vfs.NewMem(), Indexer: testIndexer})
	_, err := s.Get("k")
	require.ErrorIs(t, err, ErrNotOpen)
	require.NoError(t, s.Open())
	require.Error(t, s.Open())
	require.NoError(t, s.Set("k", val(at(1), "b")))

	// An iterator left open is released by Close.
	it, err := s.Iterator()
	require.NoError(t, err)
	require.True(t, it.Next())

	require.NoError(t, s.Close())
	require.NoError(t, s.Close()) // idempotent
	require.False(t, it.Next())
	require.Nil(t, it.Key())
	it.Release()

	checks := map[string]error{}
	_, checks["Has"] = s.Has("k")
	_, checks["Get"] = s.Get("k")
	checks["Set"] = s.Set("k", nil)
	checks["Delete"] = s.Delete("k")
	_, checks["GetOffset"] = s.GetOffset(0)
	checks["SetOffset"] = s.SetOffset(1)
	checks["MarkRecovered"] = s.MarkRecovered()
	_, checks["Iterator"] = s.Iterator()
	_, checks["IteratorWithRange"] = s.IteratorWithRange(nil, nil)
	_, checks["DueUpTo"] = s.DueUpTo(at(1), Due{}, 1)
	checks["ApplyMoves"] = s.ApplyMoves(nil, at(1))
	_, checks["IndexedUpTo"] = s.IndexedUpTo()
	_, checks["BucketKeys"] = s.BucketKeys("b", "", 1)
	_, checks["DueOf"] = s.DueOf("k")
	checks["RebuildIndexes"] = s.RebuildIndexes(at(1))
	_, checks["Stats"] = s.Stats()
	checks["Open"] = s.Open()
	for name, err := range checks {
		require.ErrorIs(t, err, ErrClosed, name)
	}

	// Close without Open.
	s2 := New("/other", Options{FS: vfs.NewMem()})
	require.NoError(t, s2.Close())
	require.ErrorIs(t, s2.Open(), ErrClosed)
}

func TestBuilderOnDisk(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	build := Builder(root, Options{Indexer: testIndexer})
	st, err := build("chronos-table", 3)
	require.NoError(t, err)
	s := st.(*Store)
	require.Equal(t, filepath.Join(root, "chronos-table", "3"), s.dir)
	require.NoError(t, st.Open())
	require.NoError(t, st.Set("k", val(at(1), "b")))
	require.NoError(t, st.SetOffset(42))
	require.NoError(t, st.Close())
	require.DirExists(t, filepath.Join(root, "chronos-table", "3"))

	st, err = build("chronos-table", 3)
	require.NoError(t, err)
	require.NoError(t, st.Open())
	defer st.Close()
	v, err := st.Get("k")
	require.NoError(t, err)
	require.Equal(t, val(at(1), "b"), v)
	off, err := st.GetOffset(0)
	require.NoError(t, err)
	require.Equal(t, int64(42), off)
	due, err := st.(*Store).DueOf("k")
	require.NoError(t, err)
	require.True(t, at(1).Equal(due))
}

// One writer and several readers (goka's contract), for the race detector.
func TestConcurrentReadersOneWriter(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, Options{Indexer: testIndexer})
	const n = 500
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			require.NoError(t, s.Set(keyN(i%50), val(at(i), fmt.Sprint("b", i%3))))
			require.NoError(t, s.SetOffset(int64(i)))
			if i%7 == 0 {
				require.NoError(t, s.Delete(keyN((i+1)%50)))
			}
		}
	}()
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				it, err := s.Iterator()
				require.NoError(t, err)
				for it.Next() {
					_, err := it.Value()
					require.NoError(t, err)
				}
				it.Release()
				_, err = s.DueUpTo(at(n), Due{}, 100)
				require.NoError(t, err)
				_, err = s.BucketKeys("b1", "", 10)
				require.NoError(t, err)
				_, err = s.Get(keyN(i))
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	checkConsistent(t, s)
}
