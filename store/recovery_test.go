package store

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// deferOpts returns options for a store that defers its indexes while it
// recovers from a fresh start.
func deferOpts(fs vfs.FS) Options {
	return Options{FS: fs, Indexer: testIndexer, Logger: quiet, DeferIndexOnRecovery: true}
}

func TestFreshRecoveryDefersIndexesToMarkRecovered(t *testing.T) {
	t.Parallel()
	s := newMemStore(t, deferOpts(vfs.NewMem()))
	// goka replays the changelog: sets, an overwrite, a delete.
	require.NoError(t, s.Set("a", val(at(10), "b1")))
	require.NoError(t, s.Set("b", val(at(20), "b1")))
	require.NoError(t, s.Set("c", val(at(30), "b2")))
	require.NoError(t, s.Set("a", val(at(40), "b2")))
	require.NoError(t, s.Delete("c"))
	due, err := s.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Empty(t, due, "no index entries are written during the recovery of a fresh store")

	require.NoError(t, s.MarkRecovered())
	due, err = s.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(20), Key: "b"}, {At: at(40), Key: "a"}}, due)
	keys, err := s.BucketKeys("b2", "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keys)
	upTo, err := s.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, upTo.IsZero(), "a fresh store's rebuild keeps the zero indexedUpTo, got %s", upTo)
	checkConsistent(t, s)

	// After recovery every write maintains the indexes again.
	require.NoError(t, s.Set("d", val(at(5), "")))
	due, err = s.DueUpTo(at(5), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(5), Key: "d"}}, due)

	// A reopened store is not fresh: its recovery indexes record by record.
	s = reopen(t, s)
	require.NoError(t, s.Set("e", val(at(6), "")))
	due, err = s.DueUpTo(at(6), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(5), Key: "d"}, {At: at(6), Key: "e"}}, due)
}

func TestCrashDuringFreshRecoveryRebuildsAtOpen(t *testing.T) {
	t.Parallel()
	fs := vfs.NewCrashableMem()
	s := New("/db", deferOpts(fs))
	require.NoError(t, s.Open())
	require.NoError(t, s.Set("a", val(at(10), "b1")))
	require.NoError(t, s.Sync())
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	require.NoError(t, s.Close())

	s2 := New("/db", deferOpts(crashed))
	require.NoError(t, s2.Open())
	defer s2.Close()
	// Before any MarkRecovered, the interrupted recovery's table is indexed.
	due, err := s2.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Equal(t, []Due{{At: at(10), Key: "a"}}, due)
	upTo, err := s2.IndexedUpTo()
	require.NoError(t, err)
	require.True(t, upTo.IsZero())
	// The rest of the recovery indexes record by record.
	require.NoError(t, s2.Set("b", val(at(11), "")))
	due, err = s2.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Len(t, due, 2)
	require.NoError(t, s2.MarkRecovered())
	checkConsistent(t, s2)
}

func TestWithoutDeferIndexesAreWrittenDuringRecovery(t *testing.T) {
	t.Parallel()
	opts := deferOpts(vfs.NewMem())
	opts.DeferIndexOnRecovery = false
	s := newMemStore(t, opts)
	require.NoError(t, s.Set("a", val(at(10), "")))
	due, err := s.DueUpTo(at(100), Due{}, 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
}

func TestDeferredRebuildErrorFailsMarkRecovered(t *testing.T) {
	t.Parallel()
	opts := deferOpts(vfs.NewMem())
	boom := errors.New("boom")
	opts.Indexer = func(Reader, string, []byte) (Entry, error) { return Entry{}, boom }
	s := newMemStore(t, opts)
	require.NoError(t, s.Set("a", []byte("x")), "a deferred Set does not run the indexer")
	require.ErrorIs(t, s.MarkRecovered(), boom)
}

// A store whose indexes are used before its deferred rebuild ran (goka's
// markRecovered returns on a cancelled context while MarkRecovered still
// runs, or has not run yet) must not hold a partial index that says it is
// current: an explicit rebuild or a move ends the deferral, and every later
// write is indexed. Without it, a job put after the scheduler's first
// rebuild stays out of the due index (never fires) while ApplyMoves marks
// the index current, until MarkRecovered happens to run.
func TestIndexUseBeforeMarkRecoveredEndsTheDeferral(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"rebuild", "moves"} {
		t.Run(first, func(t *testing.T) {
			t.Parallel()
			s := newMemStore(t, deferOpts(vfs.NewMem()))
			require.NoError(t, s.Set("a", val(at(10), "")))
			switch first {
			case "rebuild":
				require.NoError(t, s.RebuildIndexes(at(1)))
			case "moves":
				require.NoError(t, s.ApplyMoves([]Move{{Key: "a", To: at(20)}}, at(1)))
			}
			require.NoError(t, s.Set("b", val(at(15), "b1")))
			due, err := s.DueUpTo(at(100), Due{}, 0)
			require.NoError(t, err)
			want := map[string][]Due{
				"rebuild": {{At: at(10), Key: "a"}, {At: at(15), Key: "b"}},
				"moves":   {{At: at(15), Key: "b"}, {At: at(20), Key: "a"}},
			}[first]
			require.Equal(t, want, due)
			keys, err := s.BucketKeys("b1", "", 0)
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, keys)
			checkConsistent(t, s)
			require.NoError(t, s.MarkRecovered())
			due, err = s.DueUpTo(at(100), Due{}, 0)
			require.NoError(t, err)
			if first == "rebuild" {
				require.Equal(t, want, due, "MarkRecovered after the deferral ended rebuilds nothing")
			}
			checkConsistent(t, s)
		})
	}
}
