package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPendingBucketsOracle drives the bucket fan-out notes the lateness
// gauge reads (PartitionTimes.Pending) with generated chunks, completions,
// recoveries and readings against a model: the oldest start among the
// fan-outs noted and not done, where a note not renewed by a chunk since
// its partition recovered again counts for pendingGrace after the latest
// recovery that found it still counting (adversary rounds 19f and 19g).
func TestPendingBucketsOracle(t *testing.T) {
	t.Parallel()
	type note struct {
		start   time.Time
		expires time.Time // zero: renewed since the partition's last recovery
	}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 19))
		var b pendingBuckets
		model := map[int32]map[string]note{}
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		for i := range 400 {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			p := int32(rng.IntN(3))
			key := fmt.Sprintf("bucket-%d", rng.IntN(4))
			switch rng.IntN(5) {
			case 0, 1: // a chunk: notes (or renews) its fan-out
				start := now.Add(-time.Duration(rng.IntN(60)) * time.Second)
				if m := model[p][key]; !m.start.IsZero() && rng.IntN(2) == 0 {
					start = m.start // a continuation carries its start
				}
				b.start(p, key, start)
				if model[p] == nil {
					model[p] = map[string]note{}
				}
				model[p][key] = note{start: start}
			case 2: // the fan-out's last chunk
				b.done(p, key)
				delete(model[p], key)
			case 3: // the partition recovers again (a rebalance)
				b.recovered(p, now)
				for k, n := range model[p] {
					if n.expires.IsZero() || n.expires.After(now) { // past its limit: stays expired
						n.expires = now.Add(pendingGrace)
						model[p][k] = n
					}
				}
			}
			var want time.Time
			for k, n := range model[p] {
				if !n.expires.IsZero() && !now.Before(n.expires) {
					delete(model[p], k) // not renewed within pendingGrace of a recovery
					continue
				}
				if want.IsZero() || n.start.Before(want) {
					want = n.start
				}
			}
			require.Equal(t, want, b.oldest(p, now), "seed %d step %d partition %d", seed, i, p)
		}
	}
}
