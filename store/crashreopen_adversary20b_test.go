//go:build adversary20b

package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// A crash at every filesystem operation of MarkRecovered (the index build,
// the Close and the Open of the reopen, the offset): the surviving table is
// a prefix of the writes, the offset never ahead of it, the indexes the
// table's.
func TestAdv20bCrashDuringReopen(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adv20bCrashDuringReopen(t, seed) })
	}
}

func adv20bCrashDuringReopen(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	mem := vfs.NewCrashableMem()
	var clones []*vfs.MemFS
	var during atomic.Bool
	// The injector runs on Pebble's goroutines too, and MarkRecovered's
	// ingest links while it clones: its state under a mutex, its clones
	// through the guard.
	var imu sync.Mutex
	irng := rand.New(rand.NewPCG(seed, 8))
	guard := newCloneGuard(mem)
	fs := errorfs.Wrap(guard, errorfs.InjectorFunc(func(op errorfs.Op) error {
		imu.Lock()
		defer imu.Unlock()
		if during.Load() {
			clones = append(clones, guard.crashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: irng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(len(clones))))}))
		}
		return nil
	}))
	optsOf := func(fs vfs.FS) Options {
		o := deferOpts(fs)
		o.RecoveryL0CompactionThreshold = 16
		o.MemTableSize = 1 << 20
		return o
	}
	s := New("/db", optsOf(fs))
	require.NoError(t, s.Open())
	require.True(t, s.tuned())
	state := map[string]string{}
	states := []map[string]string{maps.Clone(state)}
	pad := strings.Repeat("p", 500)
	n := 3000
	for i := 0; i < n; i++ {
		k := keyN(rng.IntN(400))
		if rng.IntN(6) == 0 {
			require.NoError(t, s.Delete(k))
			delete(state, k)
		} else {
			v := append(val(at(rng.IntN(100)), fmt.Sprint("b", rng.IntN(3))), pad...)
			require.NoError(t, s.Set(k, v))
			state[k] = string(v)
		}
		states = append(states, maps.Clone(state))
		require.NoError(t, s.SetOffset(int64(i)))
		if rng.IntN(100) < 2 {
			if off, ok := s.localOffset(); ok {
				require.NoError(t, s.putOffset(off))
			}
		}
	}
	during.Store(true)
	require.NoError(t, s.MarkRecovered())
	during.Store(false)
	require.False(t, s.tuned())
	require.NoError(t, s.Close())
	imu.Lock()
	defer imu.Unlock()
	t.Logf("%d crash points", len(clones))
	for ci, c := range clones {
		s2 := New("/db", optsOf(c))
		require.NoError(t, s2.Open(), "crash point %d", ci)
		got := tableState(t, s2)
		prefix := -1
		for i := len(states) - 1; i >= 0; i-- {
			if maps.Equal(states[i], got) {
				prefix = i
				break
			}
		}
		require.GreaterOrEqual(t, prefix, 0, "crash point %d: not a prefix", ci)
		off, err := s2.GetOffset(-1)
		require.NoError(t, err)
		require.GreaterOrEqual(t, int64(prefix), off+1, "crash point %d: offset %d ahead of the writes (%d)", ci, off, prefix)
		require.NoError(t, s2.MarkRecovered())
		checkConsistent(t, s2)
		idx := dumpIndexes(t, s2)
		require.NoError(t, s2.RebuildIndexes(time.Time{}))
		require.Equal(t, idx, dumpIndexes(t, s2), "crash point %d: indexes", ci)
		require.NoError(t, s2.Close())
	}
}
