// Round 15 adversary's property test (it held): the deferred due index of a fresh store's recovery
// (Options.DeferIndexOnRecovery), driven through crashes and interruptions.
// Run:
//
//	go test -count=1 -run Adversary15 ./store/
package store

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdversary15DeferredRecoveryCrashes: docs/architecture.md, "Deferred
// indexing on recovery": "The next store on the same files either finds the
// indexes built and the offset stored, or the rebuilding flag set, and
// rebuilds at Open"; Options.Sync: "after any crash the DB holds a prefix of
// the writes (table, indexes and offset consistent)". A random changelog is
// recovered by a chain of stores on one crashable file system; each
// recovers from the stored offset and is then crashed (a crash clone with a
// random share of unsynced data kept), closed, crashed inside
// MarkRecovered's index build (the clone is taken from the Indexer, at a
// random record), or completed. The last store must hold the whole
// changelog, consistent indexes, and indexes equal to a rebuild.
func TestAdversary15DeferredRecoveryCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adversary15Crashes(t, seed) })
		if t.Failed() {
			return
		}
	}
}

func adversary15Crashes(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	type rec struct {
		key string
		val []byte
	}
	var log []rec
	for range 5 + rng.IntN(300) {
		k := fmt.Sprintf("k%02d", rng.IntN(30))
		if rng.IntN(5) == 0 {
			log = append(log, rec{key: k})
			continue
		}
		due := time.Time{}
		if rng.IntN(6) != 0 {
			due = at(rng.IntN(100))
		}
		log = append(log, rec{key: k, val: val(due, []string{"", "b1", "b2"}[rng.IntN(3)])})
	}
	want := map[string]string{}
	for _, r := range log {
		if r.val == nil {
			delete(want, r.key)
		} else {
			want[r.key] = string(r.val)
		}
	}

	var fs vfs.FS = vfs.NewCrashableMem()
	var crashAt atomic.Int64 // the indexer call that takes a crash clone (0: none)
	var calls atomic.Int64
	var clone atomic.Pointer[vfs.MemFS]
	indexer := func(r Reader, key string, value []byte) (Entry, error) {
		if n := calls.Add(1); n == crashAt.Load() {
			if m, ok := fs.(*vfs.MemFS); ok {
				clone.Store(m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(n)))}))
			}
		}
		return testIndexer(r, key, value)
	}
	for round := 0; ; round++ {
		opts := Options{FS: fs, Indexer: indexer, Logger: quiet, DeferIndexOnRecovery: true}
		s := New("/db", opts)
		require.NoError(t, s.Open(), "round %d", round)
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		last := len(log)
		if round < 6 {
			last = int(off) + 1 + rng.IntN(len(log)-int(off))
		}
		for i := int(off) + 1; i < last; i++ {
			if log[i].val == nil {
				require.NoError(t, s.Delete(log[i].key))
			} else {
				require.NoError(t, s.Set(log[i].key, log[i].val))
			}
			require.NoError(t, s.SetOffset(int64(i)))
			if rng.IntN(40) == 0 {
				// the 30 s offset commit during recovery
				o, _ := s.localOffset()
				require.NoError(t, s.putOffset(o))
			}
			if rng.IntN(60) == 0 {
				require.NoError(t, s.Sync())
			}
		}
		if last == len(log) && round >= 6 {
			require.NoError(t, s.MarkRecovered())
			checkConsistent(t, s)
			require.Equal(t, want, tableState(t, s), "round %d: the table after recovery", round)
			idx := dumpIndexes(t, s)
			require.NoError(t, s.RebuildIndexes(time.Time{}))
			require.Equal(t, idx, dumpIndexes(t, s), "round %d: the index after recovery differs from a rebuild", round)
			require.NoError(t, s.Close())
			return
		}
		m, _ := fs.(*vfs.MemFS)
		switch rng.IntN(4) {
		case 0: // crash now
			c := m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(round)))})
			require.NoError(t, s.Close())
			fs = c
		case 1: // a rebalance: clean close
			require.NoError(t, s.Close())
		case 2: // crash inside MarkRecovered's index build
			calls.Store(0)
			crashAt.Store(1 + rng.Int64N(int64(len(want))+1))
			clone.Store(nil)
			require.NoError(t, s.MarkRecovered())
			crashAt.Store(0)
			require.NoError(t, s.Close())
			if c := clone.Load(); c != nil {
				fs = c
			}
		case 3: // MarkRecovered of the partial table, then a crash
			require.NoError(t, s.MarkRecovered())
			c := m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(round)))})
			require.NoError(t, s.Close())
			fs = c
		}
	}
}
