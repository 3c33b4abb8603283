package instance

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestFetchBufferRecordsStaysUnderItsBytes: for generated budgets and
// largest records, the records a consumer may hold, each as large as the
// largest, fit the budget unless the floor of one record applies, and the
// count never passes goka's 256; the count reaches every goka consumer's
// sarama config.
func TestFetchBufferRecordsStaysUnderItsBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 9))
	for range 10000 {
		bytes := 1<<20 + rng.IntN(1<<30-1<<20)
		largest := 1 + rng.IntN(64<<20)
		n := FetchBufferRecords(bytes, largest)
		require.GreaterOrEqual(t, n, 1)
		require.LessOrEqual(t, n, 256)
		if n > 1 {
			require.LessOrEqual(t, n*largest, bytes, "budget %d, largest %d: %d records", bytes, largest, n)
		}
		if n < 256 {
			require.Greater(t, (n+1)*largest, bytes, "budget %d, largest %d: room for one more than %d", bytes, largest, n)
		}
		k := clients.Default("b:1")
		k.FetchBuffer = n
		require.Equal(t, n, k.Sarama().ChannelBufferSize)
	}
	require.Equal(t, 3, FetchBufferRecords(DefaultFetchBufferBytes, topology.DefaultMaxMessageBytes))
	require.Equal(t, 63, FetchBufferRecords(64<<20, topology.DefaultMaxMessageBytes))
	require.Equal(t, 256, FetchBufferRecords(1<<30, topology.DefaultMaxMessageBytes))
}
