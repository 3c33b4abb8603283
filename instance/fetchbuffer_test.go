package instance

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/clients"
)

// TestFetchBufferRecordsStaysUnderItsBytes: for generated budgets and
// payload limits, the records a consumer may hold, each as large as a
// command may be, fit the budget unless the floor of 16 records applies,
// and the count never passes goka's 256; the count reaches every goka
// consumer's sarama config.
func TestFetchBufferRecordsStaysUnderItsBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 9))
	for range 10000 {
		bytes := 1<<20 + rng.IntN(1<<30-1<<20)
		payload := 1 + rng.IntN(16<<20)
		n := FetchBufferRecords(bytes, payload)
		require.GreaterOrEqual(t, n, 16)
		require.LessOrEqual(t, n, 256)
		if n > 16 {
			require.LessOrEqual(t, n*(payload+1<<10), bytes, "budget %d, payload %d: %d records", bytes, payload, n)
		}
		if n < 256 {
			require.Greater(t, (n+1)*(payload+1<<10), bytes, "budget %d, payload %d: room for one more than %d", bytes, payload, n)
		}
		k := clients.Default("b:1")
		k.FetchBuffer = n
		require.Equal(t, n, k.Sarama().ChannelBufferSize)
	}
	require.Equal(t, 63, FetchBufferRecords(DefaultFetchBufferBytes, 64<<10))
	require.Equal(t, 252, FetchBufferRecords(16<<20, 64<<10))
	require.Equal(t, 256, FetchBufferRecords(DefaultFetchBufferBytes, 15<<10))
}
