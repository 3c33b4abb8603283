package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

func TestSettledRecord(t *testing.T) {
	t.Parallel()
	shard := codecs.ShardRecord{Watermark: cmdSec(30)}
	justBefore := func(n int) time.Time { return cmdSec(n).Add(-time.Nanosecond) }
	paused := codecs.JobRecord{Version: 4, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(25), Through: cmdSec(5)}
	late := codecs.JobRecord{Version: 4, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(2), Through: cmdSec(5)}
	ordinary := codecs.JobRecord{Version: 4, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(2)}
	with := func(r codecs.JobRecord, f func(*codecs.JobRecord)) *codecs.JobRecord { f(&r); return &r }
	tests := []struct {
		name  string
		rec   codecs.JobRecord
		shard codecs.ShardRecord
		due   time.Time
		want  *codecs.JobRecord
	}{
		{"paused: handled up to its due entry", paused, shard, cmdSec(20), with(paused, func(r *codecs.JobRecord) { r.Through = justBefore(20) })},
		{"paused with no entry: handled through its pause", paused, shard, time.Time{}, with(paused, func(r *codecs.JobRecord) { r.Through = cmdSec(25) })},
		{"paused: never backwards", paused, shard, cmdSec(5), nil},
		{"paused with no Through: nothing to record", *with(paused, func(r *codecs.JobRecord) { r.Through = time.Time{} }), shard, cmdSec(20), nil},
		{"completed: nothing", *with(late, func(r *codecs.JobRecord) { r.Status = codecs.StatusCompleted }), shard, cmdSec(20), nil},
		{"active with no entry: nothing", late, shard, time.Time{}, nil},
		{"active: nothing new", *with(late, func(r *codecs.JobRecord) { r.Through = cmdSec(15) }), shard, cmdSec(10), nil},
		{"active, still behind the shard: owes from its entry", late, shard, cmdSec(20), with(late, func(r *codecs.JobRecord) { r.Through = justBefore(20) })},
		{"active, still behind an advance under way", late, codecs.ShardRecord{Watermark: cmdSec(10), Advancing: cmdSec(30)}, cmdSec(20),
			with(late, func(r *codecs.JobRecord) { r.Through = justBefore(20) })},
		{"active, caught up: an ordinary job again, handled through the shard's time", late, shard, cmdSec(40),
			with(late, func(r *codecs.JobRecord) { r.Through, r.NotBefore = time.Time{}, cmdSec(30) })},
		{"ordinary job, caught up: nothing", ordinary, shard, cmdSec(40), nil},
	}
	for _, tc := range tests {
		before := tc.rec
		got := settledRecord(&tc.rec, tc.shard, tc.due)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, before, tc.rec, "%s: the input record changed", tc.name)
	}
}

func TestCompletedRecord(t *testing.T) {
	t.Parallel()
	active := &codecs.JobRecord{Version: 4, Status: codecs.StatusActive, Job: oneShot(cmdSec(3)), NotBefore: cmdSec(1), Through: cmdSec(1)}
	require.Nil(t, completedRecord(nil, 4), "no record")
	require.Nil(t, completedRecord(active, 3), "another version")
	require.Nil(t, completedRecord(&codecs.JobRecord{Version: 4, Status: codecs.StatusPaused}, 4), "paused")
	got := completedRecord(active, 4)
	require.Equal(t, &codecs.JobRecord{Version: 4, Status: codecs.StatusCompleted, Job: oneShot(cmdSec(3)), NotBefore: cmdSec(1)}, got)
	require.Equal(t, codecs.StatusActive, active.Status, "the input record changed")
}

// TestSentRecord: a settle of another version still tells the record how
// far that version's fires went, so that no later definition owes them
// again (simulation seed 7794 x 800 operations sent two fire_ids twice
// with two payloads when it did not).
func TestSentRecord(t *testing.T) {
	t.Parallel()
	shard := codecs.ShardRecord{Watermark: cmdSec(30)}
	paused := codecs.JobRecord{Version: 9, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(12), Through: cmdSec(12)}
	late := codecs.JobRecord{Version: 9, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(2), Through: cmdSec(5)}
	tomb := codecs.JobRecord{Version: 9, Status: codecs.StatusDeleted, NotBefore: cmdSec(30), Through: cmdSec(12)}
	with := func(r codecs.JobRecord, f func(*codecs.JobRecord)) *codecs.JobRecord { f(&r); return &r }
	tests := []struct {
		name string
		rec  codecs.JobRecord
		sent time.Time
		want *codecs.JobRecord
	}{
		{"paused late: handled through what went out, past its pause", paused, cmdSec(25), with(paused, func(r *codecs.JobRecord) { r.Through = cmdSec(25) })},
		{"paused: never backwards", paused, cmdSec(8), nil},
		{"active, behind the shard: owes after what went out", late, cmdSec(20), with(late, func(r *codecs.JobRecord) { r.Through = cmdSec(20) })},
		{"active, caught up: an ordinary job", late, cmdSec(30), with(late, func(r *codecs.JobRecord) { r.Through, r.NotBefore = time.Time{}, cmdSec(30) })},
		{"tombstone: a new job under its id starts after", tomb, cmdSec(20), with(tomb, func(r *codecs.JobRecord) { r.Through = cmdSec(20) })},
		{"tombstone: never backwards", tomb, cmdSec(10), nil},
		{"completed: nothing", *with(late, func(r *codecs.JobRecord) { r.Status = codecs.StatusCompleted }), cmdSec(20), nil},
		{"no time: nothing", late, time.Time{}, nil},
		// No advance fires past the shard's time: a settle that says so (a
		// record forged onto the loopback) counts up to it.
		{"paused, sent past the shard's time: up to it", paused, cmdSec(9999), with(paused, func(r *codecs.JobRecord) { r.Through = cmdSec(30) })},
		{"tombstone, sent past the shard's time: up to it", tomb, cmdSec(9999), with(tomb, func(r *codecs.JobRecord) { r.Through = cmdSec(30) })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := tc.rec
			require.Equal(t, tc.want, sentRecord(&rec, shard, tc.sent))
			require.Equal(t, tc.rec, rec, "changes nothing it is given")
		})
	}
}
