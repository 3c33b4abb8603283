package views

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAddBulk sums one operation over shards in every state: finished
// (its counts), queued or in progress (counted, no counts), unknown.
func TestAddBulk(t *testing.T) {
	t.Parallel()
	op := codecs.ShardTrigger{Kind: codecs.KindBulk, Op: "pause", Bucket: "b", TriggerID: "x"}
	other := codecs.ShardTrigger{Kind: codecs.KindBulk, Op: "delete", Prefix: "p", TriggerID: "y"}
	finished := codecs.BulkState{Queue: []codecs.ShardTrigger{op}}.Finish(5, 3, 1)
	st := BulkStatus{TriggerID: "x", Shards: 4}
	for _, s := range []codecs.BulkState{
		finished,
		{Queue: []codecs.ShardTrigger{other, op}}, // queued behind another
		{}, // not arrived
		codecs.BulkState{Queue: []codecs.ShardTrigger{op}}.Finish(2, 0, 0),
	} {
		addBulk(&st, s)
	}
	require.Equal(t, BulkStatus{TriggerID: "x", Op: "pause", Bucket: "b", Shards: 4, Finished: 2, Queued: 1, Matched: 7, Changed: 3, Skipped: 1}, st)
}
