package instance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/history"
)

// TestHistoryMemTablesHoldFourOfTheLargestRecords checks historyMemTableBytes
// on every setting of --history-fires and a spread of --history-changes:
// the memtable holds at least four of the largest records those settings
// allow (so a write is never more than a quarter of it, far from Pebble's
// half-a-memtable flush of its own), is never below its default, and is the
// default at the default settings.
func TestHistoryMemTablesHoldFourOfTheLargestRecords(t *testing.T) {
	for _, base := range []uint64{HistoryStoreMemTableBytes, HistoryViewStoreMemTableBytes} {
		require.Equal(t, base, Config{}.historyMemTableBytes(base), "the defaults")
		require.Equal(t, base, Config{History: History{Fires: history.DefaultFires, Changes: history.DefaultChanges}}.historyMemTableBytes(base))
		for fires := 1; fires <= history.MaxFires; fires++ {
			for changes := 1; changes <= history.MaxChanges; changes += 1 + fires%7 {
				c := Config{History: History{Fires: fires, Changes: changes}}
				largest := uint64(fires*codecs.HistoryFireBytes + changes*codecs.HistoryChangeBytes + codecs.MaxIDLen + 1<<10) // the entries, the key, framing
				m := c.historyMemTableBytes(base)
				require.GreaterOrEqual(t, m, base, "fires %d changes %d", fires, changes)
				require.GreaterOrEqual(t, m, 4*largest, "fires %d changes %d", fires, changes)
				require.LessOrEqual(t, m, max(base, 4*largest), "fires %d changes %d: no larger than needed", fires, changes)
			}
		}
	}
}
