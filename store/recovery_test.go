package store

import (
	"errors"
	"fmt"
	"math/rand"
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

// TestInterruptedDeferredRecoveryIndexesTheWholeTable drives a deferred
// recovery through the ways goka interrupts one, seeded: after part of the
// changelog the store is closed (a rebalance during the replay), or
// MarkRecovered runs on the partial table and the store is closed after
// it, or the two race in their own goroutines (goka's markRecovered
// returns on a cancelled context while MarkRecovered runs, and the
// partition processor closes the table meanwhile). A new store on the same
// files then recovers the rest from the stored offset. Its indexes must be
// exactly those of a store that indexed every record as it came, and the
// table must hold every record.
func TestInterruptedDeferredRecoveryIndexesTheWholeTable(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		// The changelog: sets and deletes of a few keys.
		type rec struct {
			key string
			val []byte // nil: delete
		}
		var log []rec
		for range 5 + rng.Intn(60) {
			k := fmt.Sprintf("k%02d", rng.Intn(20))
			if rng.Intn(5) == 0 {
				log = append(log, rec{key: k})
				continue
			}
			bucket := []string{"", "b1", "b2"}[rng.Intn(3)]
			log = append(log, rec{key: k, val: val(at(rng.Intn(100)), bucket)})
		}
		apply := func(s *Store, from, to int) {
			for i := from; i < to; i++ {
				var err error
				if log[i].val == nil {
					err = s.Delete(log[i].key)
				} else {
					err = s.Set(log[i].key, log[i].val)
				}
				require.NoError(t, err)
				require.NoError(t, s.SetOffset(int64(i)))
			}
		}
		// The oracle: a store that indexes record by record.
		want := newMemStore(t, Options{Indexer: testIndexer})
		apply(want, 0, len(log))
		require.NoError(t, want.MarkRecovered())

		fs := vfs.NewMem()
		s := New("/db", deferOpts(fs))
		require.NoError(t, s.Open())
		cut := rng.Intn(len(log) + 1)
		apply(s, 0, cut)
		how := rng.Intn(3)
		switch how {
		case 0: // closed during the replay
			require.NoError(t, s.Close())
		case 1: // MarkRecovered on the partial table, then closed
			require.NoError(t, s.MarkRecovered())
			require.NoError(t, s.Close())
		case 2: // MarkRecovered and Close race
			done := make(chan error, 1)
			go func() { done <- s.MarkRecovered() }()
			require.NoError(t, s.Close())
			if err := <-done; err != nil {
				require.ErrorIs(t, err, ErrClosed, "seed %d", seed)
			}
		}
		s = New("/db", deferOpts(fs))
		require.NoError(t, s.Open())
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		require.Equal(t, int64(cut-1), off, "seed %d: the stored offset is the last record applied", seed)
		apply(s, int(off)+1, len(log))
		require.NoError(t, s.MarkRecovered())
		require.Equal(t, dumpIndexes(t, want), dumpIndexes(t, s), "seed %d: cut %d of %d, interruption %d", seed, cut, len(log), how)
		require.Equal(t, rawScan(t, want, prefixTable), rawScan(t, s, prefixTable), "seed %d", seed)
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
}
