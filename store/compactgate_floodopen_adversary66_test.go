package store

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Promise (no goroutine leak: a failed Open abandons the gate): every store
// opened with a threshold has a gate now, not only a fresh one. Opens of a
// directory that is not fresh and whose DB another store holds (Pebble's
// lock) fail; no gate loop is left behind, and the holder keeps flooding
// and closes.
func TestAdversary66FailedOpenOfAStoreNotFreshLeavesNoGate(t *testing.T) {
	done := watchdog(t, 30*time.Second, t.Name())
	defer done()
	before := gateLoops()
	fs := vfs.NewMem()
	opts := Options{FS: fs, Indexer: testIndexer, Logger: quiet, KeyFilter: true, MemTableSize: 64 << 10, RecoveryL0CompactionThreshold: 32, floodMinTableBytes: -1}
	a := New("/db", opts)
	require.NoError(t, a.Open())
	require.NoError(t, a.Set("seed", val(at(1), "b")))
	require.NoError(t, a.MarkRecovered())
	require.NoError(t, a.Close())
	a = New("/db", opts)
	require.NoError(t, a.Open())
	require.NoError(t, a.MarkRecovered())
	failed := 0
	for i := range 20 {
		b := New("/db", opts)
		if err := b.Open(); err != nil {
			failed++
		} else {
			require.NoError(t, b.Close())
		}
		require.NoError(t, a.Set(keyN(i), val(at(i), "b")))
	}
	if failed == 0 {
		t.Skip("the filesystem does not lock: no failed Open")
	}
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return gateLoops() <= before }, 2*time.Second*watchdogScale, 20*time.Millisecond, "%d failed Opens left %d gate loops", failed, gateLoops()-before)
}
