package instance

import (
	"strings"
	"testing"

	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/stretchr/testify/require"
)

// TestValidateHistoryRecordFitsBatchBytes: a history record at its largest
// must fit a producer batch, or its changelog write fails on every try
// (adversary round 48: --history-fires 1000 with --batch-bytes at its
// floor lost a fold). Validate refuses such a configuration, accepts the
// largest settings at the default batch size, and ignores it with the
// history off.
func TestValidateHistoryRecordFitsBatchBytes(t *testing.T) {
	base := func() Config {
		c := Default("127.0.0.1:9092")
		c.DataDir = t.TempDir()
		c.HTTP.Addr = ""
		return c
	}
	c := base()
	require.NoError(t, c.Validate())
	c.History.Fires, c.History.Changes = history.MaxFires, history.MaxChanges
	require.NoError(t, c.Validate(), "the largest history fits the default batch bytes")
	c.Kafka.BatchBytes = 69947
	err := c.Validate()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "history record"), err.Error())
	c.History.Off = true
	require.NoError(t, c.Validate())
	c = base()
	c.History.Fires = 0 // the default
	require.NoError(t, c.Validate())
}
