package store

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestUnsettledStoreIsDiscarded draws lives of one store on a crashable
// file system: each recovers (writes that come from the changelog, offsets
// set), then takes writes of its own, and ends in a clean Close whose
// Settled says the changelog has every write, a Close whose Settled fails,
// a crash (a clone of the files while it is open), or a Close before its
// recovery ended. The next Open must keep the store only after the first:
// after any other end that followed a recovery the store is empty with no
// offset, so goka restores it from the changelog, and the writes the
// changelog may lack are gone. A store that was never recovered holds
// only what came from the changelog and is kept.
func TestUnsettledStoreIsDiscarded(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 3))
			fs := vfs.NewCrashableMem()
			var settleErr error
			var discarded int
			opts := Options{Indexer: testIndexer, Logger: quiet, Sync: rng.IntN(2) == 0,
				Settled:     func() error { return settleErr },
				OnDiscarded: func(string) { discarded++ }}
			kept := map[string]string{} // what the store must hold at the next Open
			keptOff := int64(-1)
			var fsNow vfs.FS = fs
			off := int64(-1)
			expectDiscard := false
			for life := 0; life < 6; life++ {
				o := opts
				o.FS = fsNow
				s := New("/db", o)
				before := discarded
				require.NoError(t, s.Open())
				require.Equal(t, kept, tableState(t, s), "life %d", life)
				got, err := s.GetOffset(-1)
				require.NoError(t, err)
				require.Equal(t, keptOff, got, "life %d: offset", life)
				require.Equal(t, before+b2i(expectDiscard), discarded, "life %d: discards", life)
				if expectDiscard {
					// Moved aside, not deleted.
					names, err := fsNow.List("/db" + DiscardedSuffix)
					require.NoError(t, err)
					require.NotEmpty(t, names, "life %d: the discarded copy", life)
				}
				expectDiscard = false
				state := maps.Clone(kept)
				// Recovery: writes from the changelog.
				recovered := rng.IntN(5)
				for i := recovered; i > 0; i-- {
					k, v := keyN(rng.IntN(10)), val(at(rng.IntN(100)), "")
					require.NoError(t, s.Set(k, v))
					off++
					require.NoError(t, s.SetOffset(off))
					state[k] = string(v)
				}
				end := rng.IntN(4)
				if end == 3 {
					// Revoked before the recovery ended.
					require.NoError(t, s.Close())
					kept = state
					if recovered > 0 {
						keptOff = off
					}
					fsNow = fs
					continue
				}
				require.NoError(t, s.MarkRecovered())
				// Writes of its own, acknowledged or not.
				for i := rng.IntN(6); i > 0; i-- {
					k := keyN(rng.IntN(10))
					if rng.IntN(4) == 0 {
						require.NoError(t, s.Delete(k))
						delete(state, k)
					} else {
						v := val(at(rng.IntN(100)), "")
						require.NoError(t, s.Set(k, v))
						state[k] = string(v)
					}
					if rng.IntN(2) == 0 {
						off++
						require.NoError(t, s.SetOffset(off))
					}
				}
				switch end {
				case 0: // clean: the changelog has every write
					settleErr = nil
					require.NoError(t, s.Close())
					kept, keptOff = state, off
					fsNow = fs
				case 1: // a Close that cannot tell
					settleErr = errors.New("a changelog write failed")
					require.NoError(t, s.Close())
					kept, keptOff, off = map[string]string{}, -1, -1
					fsNow = fs
					expectDiscard = true
				case 2: // a crash while open
					require.NoError(t, s.Sync())
					crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(seed, uint64(life)))})
					require.NoError(t, s.Close())
					fs = crashed
					fsNow = crashed
					kept, keptOff, off = map[string]string{}, -1, -1
					expectDiscard = true
				}
			}
		})
	}
}

// TestSettledNilKeepsEveryStore: without Settled a store is never marked,
// so a crash after writes of its own keeps them (the clock and history
// tables' contract, unchanged).
func TestSettledNilKeepsEveryStore(t *testing.T) {
	t.Parallel()
	fs := vfs.NewCrashableMem()
	s := New("/db", Options{FS: fs, Indexer: testIndexer, Logger: quiet})
	require.NoError(t, s.Open())
	require.NoError(t, s.MarkRecovered())
	require.NoError(t, s.Set("a", val(at(1), "")))
	require.NoError(t, s.Sync())
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, s.Close())
	s2 := New("/db", Options{FS: crashed, Indexer: testIndexer, Logger: quiet})
	require.NoError(t, s2.Open())
	t.Cleanup(func() { _ = s2.Close() })
	require.Equal(t, map[string]string{"a": string(val(at(1), ""))}, tableState(t, s2))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
