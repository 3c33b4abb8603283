package store

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOffsetNeverPassesAnotherWritersRecords generates changelogs in which
// this store's owner and another writer (a zombie owner resumed after a
// pause, or the owner that took the partition over) interleave, and checks
// the promise the local offset makes to the next recovery: every record at
// or before it is in the store. Before the fix the store took the offset of
// its own late write, and a store that got its partition back skipped the
// other writer's records for good (the soak lost one-shot jobs put while
// their owner was stopped with SIGSTOP).
func TestOffsetNeverPassesAnotherWritersRecords(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		// The history group's stores persist the offset only every
		// OffsetEvery offsets (and on Close): the same promise holds.
		s := newMemStore(t, Options{OffsetEvery: []int64{0, 3, 1000}[rng.Intn(3)]})
		// Recovery reads the log up to r (nothing when r < 0).
		r := int64(rng.Intn(5)) - 1
		for o := int64(0); o <= r; o++ {
			require.NoError(t, s.SetOffset(o))
		}
		require.NoError(t, s.MarkRecovered())
		held := r // every record up to held is in the store
		firstForeign := int64(-1)
		next := r + 1
		n := 1 + rng.Intn(40)
		foreignP := []float64{0, 0.05, 0.3}[rng.Intn(3)]
		for i := 0; i < n; i++ {
			// A foreign record at offset 0 is the one case the store
			// cannot tell from its own unreported first write (SetOffset).
			if rng.Float64() < foreignP && next != 0 {
				if firstForeign < 0 {
					firstForeign = next
				}
				next++
				continue
			}
			// goka does not report an acknowledgement at offset 0.
			if next != 0 {
				require.NoError(t, s.SetOffset(next))
			}
			if firstForeign < 0 {
				held = next
			}
			next++
		}
		s = reopen(t, s)
		off, err := s.GetOffset(-1)
		require.NoError(t, err)
		if firstForeign >= 0 {
			require.Less(t, off, firstForeign, "seed %d: the local offset passed another writer's record", seed)
		}
		// Liveness: the offset reaches the last record held, so a restart
		// does not re-read what the store already has (re-reading would
		// put older values back over its own latest writes).
		if held > 0 {
			require.Equal(t, held, off, "seed %d", seed)
		}
	}
}
