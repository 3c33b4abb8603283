package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// changelogRecord is one record of a generated changelog: the value the
// owner wrote for key (whole values, as goka's tables write them).
type changelogRecord struct{ key, value string }

// TestOffsetEveryRecoversEveryRecordAfterACrash generates changelogs
// written by a store with Options.OffsetEvery (the history group's stores),
// crashes it at a random point (unsynced WAL data partly lost, a flush
// somewhere or not, synced or not) and recovers it as goka does: from the
// persisted offset + 1 to the end of the changelog. The recovered table
// must equal the model (the last value of every key), so the offset never
// passes data the crash lost; and with Sync, where nothing is lost, the
// recovery re-reads fewer than OffsetEvery records. A clean Close persists
// the exact offset.
func TestOffsetEveryRecoversEveryRecordAfterACrash(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		every := []int64{2, 7, 50, 1000}[rng.IntN(4)]
		sync := rng.IntN(3) == 0
		n := 1 + rng.IntN(1500)
		fs := vfs.NewCrashableMem()
		opts := Options{FS: fs, Sync: sync, Logger: quiet, OffsetEvery: every}
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.NoError(t, s.MarkRecovered())
		var log []changelogRecord
		model := map[string]string{}
		states := []map[string]string{maps.Clone(model)} // states[i]: after record i-1
		flushAt := rng.IntN(2 * n)
		for i := range n {
			r := changelogRecord{keyN(rng.IntN(60)), fmt.Sprint("v", i)}
			log = append(log, r)
			require.NoError(t, s.Set(r.key, []byte(r.value)))
			model[r.key] = r.value
			states = append(states, maps.Clone(model))
			if i == flushAt {
				require.NoError(t, s.db.Flush())
			}
			// goka sets the offset of each acknowledged changelog write
			// but never reports offset 0.
			if i > 0 {
				require.NoError(t, s.SetOffset(int64(i)))
			}
		}
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		require.Equal(t, int64(n-1), off, "seed %d: GetOffset after recovery is the local offset", seed)
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(seed, 17))})
		require.NoError(t, s.Close())

		// Crashed: recover as goka does.
		opts.FS = crashed
		c := New("/db", opts)
		require.NoError(t, c.Open())
		from, err := c.GetOffset(-1)
		require.NoError(t, err)
		got := tableState(t, c)
		held := -1 // the surviving table is states[held]
		for i := len(states) - 1; i >= 0; i-- {
			if maps.Equal(states[i], got) {
				held = i
				break
			}
		}
		require.GreaterOrEqual(t, held, 0, "seed %d: the surviving table is not a prefix of the writes", seed)
		require.GreaterOrEqual(t, int64(held), from+1, "seed %d: the persisted offset %d passed the surviving data (%d records)", seed, from, held)
		if sync {
			require.Less(t, int64(n-1)-from, every, "seed %d: recovery re-reads at most OffsetEvery-1 records", seed)
		}
		for i := from + 1; i < int64(n); i++ {
			require.NoError(t, c.Set(log[i].key, []byte(log[i].value)))
			require.NoError(t, c.SetOffset(i))
		}
		require.NoError(t, c.MarkRecovered())
		require.Equal(t, model, tableState(t, c), "seed %d: recovered table", seed)
		require.NoError(t, c.Close())

		// A clean stop persists the exact offset.
		opts.FS = fs
		s = New("/db", opts)
		require.NoError(t, s.Open())
		require.NoError(t, s.MarkRecovered())
		require.NoError(t, s.Set("last", []byte("x")))
		require.NoError(t, s.SetOffset(int64(n)))
		s = reopen(t, s)
		off, err = s.GetOffset(-1)
		require.NoError(t, err)
		require.Equal(t, int64(n), off, "seed %d: offset after a clean stop", seed)
		require.NoError(t, s.Close())
	}
}
