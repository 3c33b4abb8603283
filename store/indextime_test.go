package store

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// indexTimeOpts is deferOpts with an IndexTime read from the table's "w"
// record (the scheduler's is its shard's watermark). A record that holds
// "bad" makes it fail.
func indexTimeOpts(fs vfs.FS) Options {
	o := deferOpts(fs)
	o.IndexTime = func(r Reader) (time.Time, error) {
		v, err := r.Get("w")
		if err != nil || v == nil {
			return time.Time{}, err
		}
		if string(v) == "bad" {
			return time.Time{}, errors.New("bad time")
		}
		return time.Parse(time.RFC3339Nano, string(v))
	}
	return o
}

// The rebuilds a store starts itself record the time the table says its
// index reflects, so the scheduler's first advance after an empty-disk
// recovery finds the index current instead of building it a second time.
func TestSelfStartedRebuildsRecordTheTablesIndexTime(t *testing.T) {
	t.Parallel()
	w1, w2 := at(50).UTC(), at(70).UTC()

	t.Run("end of a deferred recovery, the batch uncommitted", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, indexTimeOpts(vfs.NewMem()))
		require.NoError(t, s.Set("a", val(at(10), "")))
		require.NoError(t, s.Set("w", []byte(w1.Format(time.RFC3339Nano))))
		require.NoError(t, s.MarkRecovered())
		upTo, err := s.IndexedUpTo()
		require.NoError(t, err)
		require.True(t, upTo.Equal(w1), "indexed up to %s, the table says %s", upTo, w1)
		checkConsistent(t, s)
	})

	t.Run("moves on a deferred index", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, indexTimeOpts(vfs.NewMem()))
		require.NoError(t, s.Set("a", val(at(10), "")))
		require.NoError(t, s.Set("w", []byte(w1.Format(time.RFC3339Nano))))
		// No moves: the rebuild alone decides, then ApplyMoves records its own.
		require.NoError(t, s.ApplyMoves(nil, w2))
		upTo, err := s.IndexedUpTo()
		require.NoError(t, err)
		require.True(t, upTo.Equal(w2))
		due, err := s.DueUpTo(at(100), Due{}, 0)
		require.NoError(t, err)
		require.Equal(t, []Due{{At: at(10), Key: "a"}}, due)
	})

	t.Run("interrupted rebuild at Open", func(t *testing.T) {
		t.Parallel()
		fs := vfs.NewCrashableMem()
		s := New("/db", indexTimeOpts(fs))
		require.NoError(t, s.Open())
		require.NoError(t, s.Set("a", val(at(10), "")))
		require.NoError(t, s.Set("w", []byte(w2.Format(time.RFC3339Nano))))
		require.NoError(t, s.Sync())
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		require.NoError(t, s.Close())
		s2 := New("/db", indexTimeOpts(crashed))
		require.NoError(t, s2.Open())
		defer s2.Close()
		upTo, err := s2.IndexedUpTo()
		require.NoError(t, err)
		require.True(t, upTo.Equal(w2), "indexed up to %s", upTo)
	})

	t.Run("an unreadable time keeps the stored one", func(t *testing.T) {
		t.Parallel()
		s := newMemStore(t, indexTimeOpts(vfs.NewMem()))
		require.NoError(t, s.Set("a", val(at(10), "")))
		require.NoError(t, s.Set("w", []byte("bad")))
		require.NoError(t, s.MarkRecovered())
		upTo, err := s.IndexedUpTo()
		require.NoError(t, err)
		require.True(t, upTo.IsZero(), "got %s", upTo)
		due, err := s.DueUpTo(at(100), Due{}, 0)
		require.NoError(t, err)
		require.Equal(t, []Due{{At: at(10), Key: "a"}}, due)
	})
}

// A Set of the record that holds the index time (Entry.HasIndexTime)
// lowers IndexedUpTo to it when it is later, and never raises it: records
// indexed after it derive from that time (adversary round 21).
func TestSetOfAnOlderIndexTimeLowersIndexedUpTo(t *testing.T) {
	t.Parallel()
	o := Options{Logger: quiet, Indexer: func(r Reader, key string, v []byte) (Entry, error) {
		if key == "w" {
			tm, err := time.Parse(time.RFC3339Nano, string(v))
			return Entry{HasIndexTime: true, IndexTime: tm}, err
		}
		return testIndexer(r, key, v)
	}}
	s := newMemStore(t, o)
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.RebuildIndexes(at(60)))
	upTo := func() time.Time {
		u, err := s.IndexedUpTo()
		require.NoError(t, err)
		return u
	}
	require.NoError(t, s.Set("w", []byte(at(90).UTC().Format(time.RFC3339Nano))))
	require.True(t, upTo().Equal(at(60)), "a later index time does not raise it: %s", upTo())
	require.NoError(t, s.Set("w", []byte(at(30).UTC().Format(time.RFC3339Nano))))
	require.True(t, upTo().Equal(at(30)), "an older one lowers it: %s", upTo())
	require.NoError(t, s.Set("a", val(at(40), "")))
	require.True(t, upTo().Equal(at(30)))
}
