package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// A store recovering from its changelog batches its writes. Generated
// runs of Sets, Deletes and SetOffsets (goka's replay), with the periodic
// offset commit, reads and index calls between them, then a crash at a
// random point with a random share of unsynced data lost: every read sees
// every write before it; the surviving table is a prefix of the writes;
// the persisted offset is never ahead of that prefix; and what survives
// is indexed as the Indexer derives it.
func TestRecoveryBatchCrashKeepsAPrefix(t *testing.T) {
	t.Parallel()
	kinds := map[string]func(fs vfs.FS) Options{
		"deferred": deferOpts,
		"no-indexer": func(fs vfs.FS) Options {
			return Options{FS: fs, Logger: quiet}
		},
		// Reopened at MarkRecovered with Pebble's threshold (untune).
		"deferred-tuned": func(fs vfs.FS) Options {
			o := deferOpts(fs)
			o.RecoveryL0CompactionThreshold = 16
			return o
		},
	}
	for name, optsOf := range kinds {
		for seed := uint64(1); seed <= 12; seed++ {
			t.Run(fmt.Sprintf("%s-seed%d", name, seed), func(t *testing.T) {
				t.Parallel()
				recoveryBatchCrash(t, optsOf, seed)
			})
		}
	}
}

func recoveryBatchCrash(t *testing.T, optsOf func(vfs.FS) Options, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	fs := vfs.NewCrashableMem()
	s := New("/db", optsOf(fs))
	require.NoError(t, s.Open())
	state := map[string]string{}
	states := []map[string]string{maps.Clone(state)}
	committed := int64(-1) // the offset last committed by the periodic commit
	n := 1500 + rng.IntN(1500)
	pad := strings.Repeat("p", 200+rng.IntN(800)) // batches fill within a run
	markAt := -1
	if rng.IntN(3) == 0 {
		markAt = rng.IntN(n) // the recovery ends here; later writes are the processor's
	}
	for i := 0; i < n; i++ {
		k := keyN(rng.IntN(300))
		if rng.IntN(5) == 0 {
			require.NoError(t, s.Delete(k))
			delete(state, k)
		} else {
			v := append(val(at(rng.IntN(100)), fmt.Sprint("b", rng.IntN(3))), pad...)
			require.NoError(t, s.Set(k, v))
			state[k] = string(v)
		}
		states = append(states, maps.Clone(state))
		require.NoError(t, s.SetOffset(int64(i)))
		switch r := rng.IntN(100); {
		case r < 3:
			// The read sees every write before it.
			k := keyN(rng.IntN(300))
			got, err := s.Get(k)
			require.NoError(t, err)
			want, ok := state[k]
			if !ok {
				require.Nil(t, got)
			} else {
				require.Equal(t, want, string(got))
			}
		case r < 5:
			// commitOffsetsDuringRecovery's tick.
			if off, ok := s.localOffset(); ok && !s.Recovered() {
				require.NoError(t, s.putOffset(off))
				committed = off
			}
		case r < 6 && s.opts.Indexer != nil:
			// An index use before MarkRecovered ends the deferral.
			_, err := s.DueUpTo(at(100), Due{}, 0)
			require.NoError(t, err)
		}
		if i == markAt {
			require.NoError(t, s.MarkRecovered())
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, 5))})
	require.NoError(t, s.Close())

	s2 := New("/db", optsOf(crashed))
	require.NoError(t, s2.Open())
	defer s2.Close()
	got := tableState(t, s2)
	prefix := -1
	for i := len(states) - 1; i >= 0; i-- {
		if maps.Equal(states[i], got) {
			prefix = i
			break
		}
	}
	require.GreaterOrEqual(t, prefix, 0, "the surviving table is not a prefix of the writes")
	off, err := s2.GetOffset(-1)
	require.NoError(t, err)
	require.GreaterOrEqual(t, int64(prefix), off+1, "the persisted offset %d is ahead of the surviving writes (%d)", off, prefix)
	if committed >= 0 && markAt < 0 {
		t.Logf("offset %d committed during the recovery, %d persisted, prefix %d of %d", committed, off, prefix, n)
	}
	if s2.opts.Indexer != nil {
		checkConsistent(t, s2)
		idx := dumpIndexes(t, s2)
		require.NoError(t, s2.RebuildIndexes(time.Time{}))
		require.Equal(t, idx, dumpIndexes(t, s2), "the indexes after the crash are not the table's")
	}
}

// A clean Close of a store in the middle of its recovery keeps every write
// and the offset, and a store that was told to sync every write does not
// batch.
func TestRecoveryBatchCloseKeepsEverything(t *testing.T) {
	t.Parallel()
	for _, sync := range []bool{false, true} {
		fs := vfs.NewMem()
		opts := deferOpts(fs)
		opts.Sync = sync
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.Equal(t, !sync, s.batching)
		state := map[string]string{}
		for i := 0; i < 500; i++ {
			k := keyN(i % 170)
			v := val(at(i%100), "b")
			require.NoError(t, s.Set(k, v))
			state[k] = string(v)
			require.NoError(t, s.SetOffset(int64(i)))
		}
		require.NoError(t, s.Delete(keyN(3)))
		delete(state, keyN(3))
		require.NoError(t, s.SetOffset(500))
		require.NoError(t, s.Close())
		s = New("/db", opts)
		require.NoError(t, s.Open())
		require.Equal(t, state, tableState(t, s))
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		require.Equal(t, int64(500), off)
		require.NoError(t, s.MarkRecovered())
		checkConsistent(t, s)
		require.NoError(t, s.Close())
	}
}

// A store empty at Open recovers behind the compaction gate of
// RecoveryL0CompactionThreshold, which MarkRecovered releases on the same
// DB, keeping every write and its offset; a store with data at Open is not
// tuned; an iterator open at MarkRecovered keeps working across it.
func TestRecoveryThresholdEndsAtMarkRecovered(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	opts := deferOpts(fs)
	opts.RecoveryL0CompactionThreshold = 16
	opts.MemTableSize = 1 << 20 // several flushes below
	s := New("/db", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	db := s.db
	state := map[string]string{}
	pad := strings.Repeat("x", 1000)
	for i := 0; i < 5000; i++ {
		k := keyN(i * 7919 % 3000)
		v := append(val(at(i%100), "b"), pad...)
		require.NoError(t, s.Set(k, v))
		state[k] = string(v)
		require.NoError(t, s.SetOffset(int64(i)))
	}
	require.Greater(t, s.db.Metrics().Flush.Count, int64(2), "the recovery flushed")
	require.NoError(t, s.MarkRecovered())
	require.False(t, s.tuned(), "the gate is released")
	require.Same(t, db, s.db, "the same DB: no reopen")
	require.Equal(t, state, tableState(t, s))
	off, err := s.GetOffset(-1)
	require.NoError(t, err)
	require.Equal(t, int64(4999), off)
	checkConsistent(t, s)
	// Writes after the release are indexed and kept.
	require.NoError(t, s.Set("after", val(at(1), "")))
	due, err := s.DueOf("after")
	require.NoError(t, err)
	require.True(t, at(1).Equal(due))
	require.NoError(t, s.Close())

	s = New("/db", opts)
	require.NoError(t, s.Open())
	require.False(t, s.tuned(), "a store with data at Open is not tuned")
	state["after"] = string(val(at(1), ""))
	require.Equal(t, state, tableState(t, s))
	require.NoError(t, s.Close())

	// An iterator open at MarkRecovered.
	s = New("/other", opts)
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	require.NoError(t, s.Set("a", val(at(1), "")))
	it, err := s.Iterator()
	require.NoError(t, err)
	require.NoError(t, s.MarkRecovered())
	require.False(t, s.tuned(), "released with an iterator open")
	require.True(t, it.Next())
	require.Equal(t, "a", string(it.Key()))
	it.Release()
	require.NoError(t, s.Close())
}

// The gate holds level 0 back while a tuned store recovers: with random
// keys flushed ~25 times it grows at least as deep as Pebble lets it under
// the threshold (a compaction at 2×sublevels ≥ threshold), where Pebble's
// own threshold compacts at 2. After MarkRecovered, on the same DB, the
// compactions bring it down, and three more flushes (depth 3, far below
// the gate's 16) are compacted too.
func TestRecoveryGateHoldsLevelZero(t *testing.T) {
	t.Parallel()
	opts := deferOpts(vfs.NewMem())
	opts.RecoveryL0CompactionThreshold = 32
	opts.MemTableSize = 256 << 10
	s := New("/db", opts)
	require.NoError(t, s.Open())
	defer s.Close()
	rng := rand.New(rand.NewPCG(32, 1))
	pad := strings.Repeat("r", 300)
	// write writes n records, or until level 0 has reached `until`
	// sublevels (0: all n), and returns the deepest level 0 it saw.
	write := func(n int, until int32) (deepest int32) {
		for i := 0; i < n && (until == 0 || deepest < until); i++ {
			require.NoError(t, s.Set(keyN(rng.IntN(99999)), append(val(at(i%50), "b"), pad...)))
			if i%50 == 0 {
				deepest = max(deepest, s.db.Metrics().Levels[0].Sublevels)
			}
		}
		return deepest
	}
	// Until level 0 is 16 sublevels deep (the gate's threshold/2), or
	// 200,000 writes (~50 MiB): 20,000 writes were not always enough when
	// flushes lag behind the writer (GOMAXPROCS=1, a loaded CI machine)
	// and Pebble flushes several memtables into one file. Without the
	// gate (threshold 0) level 0 reached 12 at most: Pebble compacts from
	// 2 sublevels on, and falls only that far behind this writer.
	held := write(200000, 16)
	require.NoError(t, s.MarkRecovered())
	require.Eventually(t, func() bool { return s.db.Metrics().Levels[0].Sublevels < 4 }, 20*time.Second, 20*time.Millisecond,
		"released, Pebble compacts level 0 down")
	t.Logf("deepest level 0: %d sublevels while held (threshold 32)", held)
	require.GreaterOrEqual(t, held, int32(16), "the gate let level 0 grow to threshold/2 before compacting")
	for range 3 {
		write(500, 0)
		require.NoError(t, s.db.Flush())
	}
	require.Eventually(t, func() bool { return s.db.Metrics().Levels[0].Sublevels < 2 }, 20*time.Second, 20*time.Millisecond,
		"released, Pebble compacts level 0 at its own threshold")
	checkConsistent(t, s)
}
