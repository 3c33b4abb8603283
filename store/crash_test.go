package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// crashRun applies n random Sets and Deletes (and, every 50 ops, an offset
// commit) to a store on a crashable mem FS, recording the table state after
// every acknowledged write. It then takes a crash clone of the FS while the
// store is still open and returns the clone and the states.
func crashRun(t *testing.T, sync, syncAtEnd bool, seed uint64, n int, flushAt int, unsynced int) (*vfs.MemFS, Options, []map[string]string) {
	fs := vfs.NewCrashableMem()
	opts := Options{FS: fs, Sync: sync, Indexer: testIndexer, Logger: quiet}
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	rng := rand.New(rand.NewPCG(seed, 7))
	state := map[string]string{}
	states := []map[string]string{maps.Clone(state)}
	for i := 0; i < n; i++ {
		k := keyN(rng.IntN(40))
		if rng.IntN(4) == 0 {
			require.NoError(t, s.Delete(k))
			delete(state, k)
		} else {
			v := val(at(rng.IntN(100)), fmt.Sprint("b", rng.IntN(3)))
			require.NoError(t, s.Set(k, v))
			state[k] = string(v)
		}
		states = append(states, maps.Clone(state))
		if i == flushAt {
			require.NoError(t, s.db.Flush())
		}
		// goka sets the offset of every acknowledged changelog write.
		require.NoError(t, s.SetOffset(int64(i)))
	}
	if syncAtEnd {
		require.NoError(t, s.Sync())
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(seed, 11))})
	require.NoError(t, s.Close())
	opts.FS = crashed
	return crashed, opts, states
}

func openCrashed(t *testing.T, opts Options) *Store {
	s := New("/db", opts)
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	checkConsistent(t, s)
	// The indexes equal what the Indexer derives from the surviving table.
	idx := dumpIndexes(t, s)
	require.NoError(t, s.RebuildIndexes(time.Time{}))
	require.Equal(t, idx, dumpIndexes(t, s))
	return s
}

func TestCrashWithSyncKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			_, opts, states := crashRun(t, true, false, seed, 300, int(seed)*50, 0)
			s := openCrashed(t, opts)
			require.Equal(t, states[len(states)-1], tableState(t, s))
			off, err := s.GetOffset(-1)
			require.NoError(t, err)
			require.Equal(t, int64(299), off)
		})
	}
}

func TestCrashWithoutSyncKeepsAPrefix(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 8; seed++ {
		for _, unsynced := range []int{0, 30, 70, 100} {
			t.Run(fmt.Sprintf("seed%d-unsynced%d", seed, unsynced), func(t *testing.T) {
				t.Parallel()
				flushAt := -1
				if seed%2 == 0 {
					flushAt = 150
				}
				_, opts, states := crashRun(t, false, false, seed, 1500, flushAt, unsynced)
				s := openCrashed(t, opts)
				got := tableState(t, s)
				prefix := -1
				for i := len(states) - 1; i >= 0; i-- {
					if maps.Equal(states[i], got) {
						prefix = i
						break
					}
				}
				require.GreaterOrEqual(t, prefix, 0, "surviving table is not a prefix of the writes")
				if flushAt >= 0 {
					// A flush syncs everything before it.
					require.Greater(t, prefix, flushAt)
				}
				// The offset is never ahead of the table: it was committed
				// after write number off+1.
				off, err := s.GetOffset(-1)
				require.NoError(t, err)
				require.GreaterOrEqual(t, int64(prefix), off+1)
				t.Logf("%s: prefix %d/%d survived", t.Name(), prefix, len(states)-1)
				// The store keeps working after recovery.
				require.NoError(t, s.Set("after-crash", val(at(1), "b0")))
				checkConsistent(t, s)
			})
		}
	}
}

// With Sync=false, Store.Sync makes everything before it survive a crash.
func TestCrashWithoutSyncAfterStoreSync(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			_, opts, states := crashRun(t, false, true, seed, 300, -1, 0)
			s := openCrashed(t, opts)
			require.Equal(t, states[len(states)-1], tableState(t, s))
			off, err := s.GetOffset(-1)
			require.NoError(t, err)
			require.Equal(t, int64(299), off)
		})
	}
}
