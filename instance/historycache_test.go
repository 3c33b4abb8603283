package instance

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHistoryCacheSplitsOverPartitions: each history store gets the
// configured total divided by the partitions, at least 1 MiB, and 0 means
// the default; a negative total is refused by Validate.
func TestHistoryCacheSplitsOverPartitions(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	for range 200 {
		cfg := Default()
		cfg.Layout.Partitions = 1 + rng.Int32N(64)
		cfg.History.CacheBytes = rng.Int64N(1 << 32)
		if rng.IntN(5) == 0 {
			cfg.History.CacheBytes = 0
		}
		total := cfg.History.CacheBytes
		if total == 0 {
			total = DefaultHistoryCacheBytes
		}
		got := cfg.historyCacheBytes()
		require.GreaterOrEqual(t, got, int64(1<<20))
		if total/int64(cfg.Layout.Partitions) >= 1<<20 {
			require.Equal(t, total/int64(cfg.Layout.Partitions), got, "%d bytes over %d partitions", total, cfg.Layout.Partitions)
		} else {
			require.Equal(t, int64(1<<20), got)
		}
	}
	require.Equal(t, int64(16<<20), Default().historyCacheBytes(), "the default is 16 MiB a partition at 12 partitions")
	cfg := Default()
	cfg.History.CacheBytes = -1
	require.ErrorContains(t, cfg.Validate(), "history cache -1 bytes")
}
