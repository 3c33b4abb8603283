//go:build adversary20b

package store

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestAdv20bCrashDuringPlainRestartLeavesNoManifest: the crash harness of
// TestAdv20bCrashDuringReopen (a crash clone of the MemFS before every
// filesystem operation) applied to a plain restart, Close and Open with no
// recovery threshold: 1 of ~105 crash points (seeds 1 and 3, point 69)
// leaves a DB Pebble cannot open ("could not open manifest file
// MANIFEST-000012 ... file does not exist"). So the unopenable crash point
// of the reopen at MarkRecovered is not the reopen's: every Close and Open
// has it under this harness. Open: whether a real file system can get
// there (Pebble's manifest and marker syncs) or CrashableMem's crash clone
// is stricter than one is not known yet.
func TestAdv20bCrashDuringPlainRestartLeavesNoManifest(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		mem := vfs.NewCrashableMem()
		var clones []*vfs.MemFS
		var during atomic.Bool
		fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
			if during.Load() {
				clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(len(clones))))}))
			}
			return nil
		}))
		o := deferOpts(fs)
		o.MemTableSize = 1 << 20
		s := New("/db", o)
		require.NoError(t, s.Open())
		for i := 0; i < 3000; i++ {
			require.NoError(t, s.Set(keyN(i%400), append(val(at(i%100), "b"), make([]byte, 500)...)))
			require.NoError(t, s.SetOffset(int64(i)))
		}
		require.NoError(t, s.MarkRecovered())
		// A plain restart: Close and Open again (what every restart does).
		during.Store(true)
		require.NoError(t, s.Close())
		s = New("/db", o)
		require.NoError(t, s.Open())
		require.NoError(t, s.MarkRecovered())
		require.NoError(t, s.Close())
		during.Store(false)
		bad := 0
		for ci, c := range clones {
			o2 := o
			o2.FS = c
			s2 := New("/db", o2)
			if err := s2.Open(); err != nil {
				bad++
				t.Logf("seed %d crash point %d: %v", seed, ci, err)
				continue
			}
			require.NoError(t, s2.Close())
		}
		require.Zero(t, bad, "seed %d: %d of %d crash points leave a DB that cannot be opened", seed, bad, len(clones))
	}
}
