package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

var cmdT0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func cmdSec(n int) time.Time { return cmdT0.Add(time.Duration(n) * time.Second) }

func every10() codecs.Job {
	return codecs.Job{Spec: schedule.Spec{Every: 10 * time.Second}, Payload: []byte(`{"a":1}`), Bucket: "b",
		MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: time.Minute}
}

func oneShot(at time.Time) codecs.Job {
	return codecs.Job{Spec: schedule.Spec{At: at}, MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: time.Minute}
}

func ver(v uint64) *uint64 { return &v }

// TestApplyCommand is the table of what each command does to each kind of
// record. every10 fires at :00, :10, :20, ... of cmdT0's minute.
func TestApplyCommand(t *testing.T) {
	t.Parallel()
	active := &codecs.JobRecord{Version: 7, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(-100), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(-100)}
	// Paused at +5 after handling through +5; it owes nothing before its pause.
	paused := &codecs.JobRecord{Version: 8, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(5), Through: cmdSec(5), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(5)}
	// Paused at +25 but handled only through +5: it owes +10 and +20.
	pausedOwing := &codecs.JobRecord{Version: 8, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(25), Through: cmdSec(5), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(25)}
	completed := &codecs.JobRecord{Version: 3, Status: codecs.StatusCompleted, Job: oneShot(cmdSec(-50)), NotBefore: cmdSec(-60), CreatedAt: cmdSec(-60), UpdatedAt: cmdSec(-50)}
	tomb := &codecs.JobRecord{Version: 900, Status: codecs.StatusDeleted, Job: codecs.Job{Spec: every10().Spec}, Through: cmdSec(35), NotBefore: cmdSec(30)}
	shardAt := func(n int) codecs.ShardRecord { return codecs.ShardRecord{Watermark: cmdSec(n)} }
	put := codecs.Command{Op: codecs.OpPut, ID: "j", Job: every10()}

	tests := []struct {
		name    string
		in      commandInput
		want    *codecs.JobRecord // nil: unchanged
		fire    *manualFire
		errCode string
	}{
		{name: "put of a new job owes from its time",
			in:   commandInput{Cmd: put, Shard: shardAt(0), TS: cmdSec(3), Offset: 41},
			want: &codecs.JobRecord{Version: 42, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(3), CreatedAt: cmdSec(3), UpdatedAt: cmdSec(3)}},
		{name: "put of a new job behind the shard records what it owes",
			in:   commandInput{Cmd: put, Shard: shardAt(30), TS: cmdSec(3), Offset: 41},
			want: &codecs.JobRecord{Version: 42, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(3), Through: cmdSec(3), OwedAt: cmdSec(30), CreatedAt: cmdSec(3), UpdatedAt: cmdSec(3)}},
		{name: "put behind an advance under way records what it owes",
			in:   commandInput{Cmd: put, Shard: codecs.ShardRecord{Watermark: cmdSec(0), Advancing: cmdSec(10)}, TS: cmdSec(3)},
			want: &codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(3), Through: cmdSec(3), OwedAt: cmdSec(10), CreatedAt: cmdSec(3), UpdatedAt: cmdSec(3)}},
		{name: "put under a deleted id starts after it, above its version",
			in:   commandInput{Cmd: put, Tomb: tomb, Shard: shardAt(30), TS: cmdSec(3), Offset: 41},
			want: &codecs.JobRecord{Version: 901, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(35), CreatedAt: cmdSec(3), UpdatedAt: cmdSec(3)}},
		{name: "put updating an active job continues where it was handled",
			in:   commandInput{Cmd: put, Old: active, Handled: cmdSec(12), Shard: shardAt(12), TS: cmdSec(3), Offset: 99},
			want: &codecs.JobRecord{Version: 8, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(12), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(3)}},
		{name: "put on a paused job owing fires keeps them",
			in:   commandInput{Cmd: put, Old: pausedOwing, Handled: cmdSec(5), Shard: shardAt(30), TS: cmdSec(40)},
			want: &codecs.JobRecord{Version: 9, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(5), Through: cmdSec(5), OwedAt: cmdSec(30), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(40)}},
		{name: "put on a paused job owing nothing starts at its time",
			in:   commandInput{Cmd: put, Old: paused, Handled: cmdSec(5), Shard: shardAt(30), TS: cmdSec(40)},
			want: &codecs.JobRecord{Version: 9, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(40), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(40)}},
		{name: "put of a one-shot in the past completes",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpPut, ID: "j", Job: oneShot(cmdSec(-5))}, Shard: shardAt(0), TS: cmdSec(3)},
			want: &codecs.JobRecord{Version: 1, Status: codecs.StatusCompleted, Job: oneShot(cmdSec(-5)), NotBefore: cmdSec(3), CreatedAt: cmdSec(3), UpdatedAt: cmdSec(3)}},
		{name: "put on a completed job starts at its time",
			in:   commandInput{Cmd: put, Old: completed, Handled: cmdSec(0), Shard: shardAt(0), TS: cmdSec(3)},
			want: &codecs.JobRecord{Version: 4, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(3), CreatedAt: cmdSec(-60), UpdatedAt: cmdSec(3)}},
		{name: "delete of no job does nothing",
			in: commandInput{Cmd: codecs.Command{Op: codecs.OpDelete, ID: "j"}, Tomb: tomb, Shard: shardAt(0), TS: cmdSec(3)}},
		{name: "delete of an active job leaves a tombstone at the shard's time",
			in: commandInput{Cmd: codecs.Command{Op: codecs.OpDelete, ID: "j"}, Old: active, Shard: codecs.ShardRecord{Watermark: cmdSec(20), Advancing: cmdSec(30)}, TS: cmdSec(3)},
			want: &codecs.JobRecord{Version: 8, Status: codecs.StatusDeleted, Job: codecs.Job{Spec: every10().Spec}, Through: cmdSec(30), NotBefore: cmdSec(30),
				CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(3)}},
		{name: "delete of a paused job keeps how far it was handled",
			in: commandInput{Cmd: codecs.Command{Op: codecs.OpDelete, ID: "j"}, Old: pausedOwing, Handled: cmdSec(15), Shard: shardAt(30), TS: cmdSec(40)},
			want: &codecs.JobRecord{Version: 9, Status: codecs.StatusDeleted, Job: codecs.Job{Spec: every10().Spec}, Through: cmdSec(15), NotBefore: cmdSec(30),
				CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(40)}},
		{name: "pause of an active job",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j"}, Old: active, Handled: cmdSec(2), Shard: shardAt(2), TS: cmdSec(4)},
			want: &codecs.JobRecord{Version: 8, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(4), Through: cmdSec(2), OwedAt: cmdSec(2), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(4)}},
		{name: "pause of a paused job does nothing",
			in: commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j"}, Old: paused, Shard: shardAt(2), TS: cmdSec(4)}},
		{name: "resume of a paused job starts at its time",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpResume, ID: "j"}, Old: paused, Handled: cmdSec(5), Shard: shardAt(30), TS: cmdSec(33)},
			want: &codecs.JobRecord{Version: 9, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(33), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(33)}},
		{name: "resume of a paused job owing fires keeps them",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpResume, ID: "j"}, Old: pausedOwing, Handled: cmdSec(5), Shard: shardAt(30), TS: cmdSec(33)},
			want: &codecs.JobRecord{Version: 9, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(5), Through: cmdSec(5), OwedAt: cmdSec(30), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(33)}},
		{name: "resume of an active job does nothing",
			in: commandInput{Cmd: codecs.Command{Op: codecs.OpResume, ID: "j"}, Old: active, Shard: shardAt(30), TS: cmdSec(33)}},
		{name: "fire with a trigger id and a payload",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpFire, ID: "j", TriggerID: "t1", Payload: []byte(`{"b":2}`)}, Old: paused, TS: cmdSec(9), Partition: 2, Offset: 5},
			fire: &manualFire{TriggerID: "t1", At: cmdSec(9), Payload: []byte(`{"b":2}`)}},
		{name: "fire without a trigger id takes its position and the job's payload",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpFire, ID: "j"}, Old: completed, TS: cmdSec(9), Partition: 2, Offset: 5},
			fire: &manualFire{TriggerID: "m-2-5", At: cmdSec(9)}},
		{name: "if_version conflict",
			in:      commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j", IfVersion: ver(6)}, Old: active, TS: cmdSec(1)},
			errCode: codecs.CodeVersionConflict},
		{name: "if_version 0 on an existing job",
			in:      commandInput{Cmd: codecs.Command{Op: codecs.OpPut, ID: "j", Job: every10(), IfVersion: ver(0)}, Old: active, TS: cmdSec(1)},
			errCode: codecs.CodeVersionConflict},
		{name: "if_version 0 creates a new job over a tombstone",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpPut, ID: "j", Job: every10(), IfVersion: ver(0)}, Tomb: tomb, Shard: shardAt(0), TS: cmdSec(50), Offset: 1000},
			want: &codecs.JobRecord{Version: 1001, Status: codecs.StatusActive, Job: every10(), NotBefore: cmdSec(50), CreatedAt: cmdSec(50), UpdatedAt: cmdSec(50)}},
		{name: "if_version matches",
			in:   commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j", IfVersion: ver(7)}, Old: active, Handled: cmdSec(1), TS: cmdSec(1)},
			want: &codecs.JobRecord{Version: 8, Status: codecs.StatusPaused, Job: every10(), NotBefore: cmdSec(1), Through: cmdSec(1), CreatedAt: cmdSec(-100), UpdatedAt: cmdSec(1)}},
		{name: "pause of no job", in: commandInput{Cmd: codecs.Command{Op: codecs.OpPause, ID: "j"}, Tomb: tomb, TS: cmdSec(1)}, errCode: codecs.CodeUnknownJob},
		{name: "resume of no job", in: commandInput{Cmd: codecs.Command{Op: codecs.OpResume, ID: "j"}, TS: cmdSec(1)}, errCode: codecs.CodeUnknownJob},
		{name: "fire of no job", in: commandInput{Cmd: codecs.Command{Op: codecs.OpFire, ID: "j"}, TS: cmdSec(1)}, errCode: codecs.CodeUnknownJob},
	}
	cache := schedule.NewCache(16)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var before codecs.JobRecord
			if tc.in.Old != nil {
				before = *tc.in.Old
			}
			eff, err := applyCommand(tc.in, cache)
			if tc.in.Old != nil {
				require.Equal(t, before, *tc.in.Old, "the input record is not changed")
			}
			if tc.errCode != "" {
				var ce *codecs.Error
				require.ErrorAs(t, err, &ce)
				require.Equal(t, tc.errCode, ce.Code)
				require.Equal(t, outcomeRejected, classify(err))
				require.Equal(t, commandEffect{}, eff)
				require.Equal(t, err, checkCommand(tc.in.Cmd, tc.in.Old), "the callback rejects it before dispatching anything")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, eff.Record)
			require.Equal(t, tc.fire, eff.Fire)
		})
	}
}

func TestOwedUpTo(t *testing.T) {
	t.Parallel()
	ts := cmdSec(7)
	active := &codecs.JobRecord{Status: codecs.StatusActive}
	paused := &codecs.JobRecord{Status: codecs.StatusPaused, Through: cmdSec(1)}
	pausedNoThrough := &codecs.JobRecord{Status: codecs.StatusPaused}
	completed := &codecs.JobRecord{Status: codecs.StatusCompleted}
	tests := []struct {
		op   string
		old  *codecs.JobRecord
		upTo time.Time
		owed bool
	}{
		{codecs.OpPut, nil, time.Time{}, false},
		{codecs.OpPut, active, farFuture, true},
		{codecs.OpPut, completed, farFuture, true},
		{codecs.OpPause, active, ts, true},
		{codecs.OpPause, paused, time.Time{}, false},
		{codecs.OpResume, paused, farFuture, true},
		{codecs.OpResume, active, time.Time{}, false},
		{codecs.OpDelete, active, time.Time{}, false},
		{codecs.OpDelete, paused, farFuture, true},
		{codecs.OpDelete, pausedNoThrough, time.Time{}, false},
		{codecs.OpFire, active, time.Time{}, false},
	}
	for _, tc := range tests {
		upTo, owed := owedUpTo(codecs.Command{Op: tc.op}, tc.old, ts)
		require.Equal(t, tc.owed, owed, "%s on %v", tc.op, tc.old)
		require.True(t, tc.upTo.Equal(upTo), "%s on %v: up to %s", tc.op, tc.old, upTo)
	}
}

// TestApplyCommandSequences applies generated command sequences to one job
// id, feeding each result back as the next record (as the table does): an
// accepted command that changes a live job raises its version by exactly
// one, a put of a new job takes a version above any it had, versions never
// go down, a rejected command changes nothing and dispatches nothing, a
// manual fire never changes the record, and the same input always gives
// the same decision.
func TestApplyCommandSequences(t *testing.T) {
	t.Parallel()
	cache := schedule.NewCache(64)
	jobs := []codecs.Job{every10(), oneShot(cmdSec(30)), oneShot(cmdSec(-30)),
		{Spec: schedule.Spec{Cron: "*/2 * * * * *"}, MisfirePolicy: codecs.MisfireSkip},
		{Spec: schedule.Spec{Every: time.Second}, Payload: []byte(`{"n":2}`), MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: time.Hour}}
	ops := []string{codecs.OpPut, codecs.OpPut, codecs.OpDelete, codecs.OpPause, codecs.OpResume, codecs.OpFire}
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 16))
		var cur *codecs.JobRecord
		var shard codecs.ShardRecord
		offset, ts := int64(rng.IntN(1000)), cmdSec(rng.IntN(100))
		for step := range 60 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			offset += 1 + int64(rng.IntN(3))
			ts = ts.Add(time.Duration(rng.IntN(20_000)-5_000) * time.Millisecond) // record times may go back
			if rng.IntN(3) == 0 {
				shard.Watermark = shard.Watermark.Add(time.Duration(rng.IntN(30)) * time.Second)
				if shard.Watermark.Before(cmdT0) {
					shard.Watermark = cmdT0
				}
			}
			shard.Advancing = time.Time{}
			if rng.IntN(4) == 0 {
				shard.Advancing = shard.Watermark.Add(time.Duration(1+rng.IntN(10)) * time.Second)
			}
			cmd := codecs.Command{Op: ops[rng.IntN(len(ops))], ID: "j"}
			if cmd.Op == codecs.OpPut {
				cmd.Job = jobs[rng.IntN(len(jobs))]
			}
			if cmd.Op == codecs.OpFire && rng.IntN(2) == 0 {
				cmd.TriggerID = fmt.Sprintf("t%d", rng.IntN(3))
			}
			old, tomb := liveRecord(cur)
			if rng.IntN(4) == 0 {
				var have uint64
				if old != nil {
					have = old.Version
				}
				cmd.IfVersion = ver(have + uint64(rng.IntN(2))) // right or one off
			}
			in := commandInput{Cmd: cmd, Old: old, Tomb: tomb, Shard: shard, TS: ts, Partition: 0, Offset: offset}
			if _, owed := owedUpTo(cmd, old, ts); owed {
				// What Scheduler.handled returns: at least what the record
				// says it handled, at most the shard's time or upTo.
				in.Handled = later(old.HandledThrough(shard.Watermark), later(shard.Watermark, shard.Advancing))
			}
			var before *codecs.JobRecord
			if cur != nil {
				c := *cur
				before = &c
			}
			eff, err := applyCommand(in, cache)
			again, err2 := applyCommand(in, cache)
			require.Equal(t, err, err2, where)
			require.True(t, reflect.DeepEqual(eff, again), "%s: the same input decided twice differently", where)
			require.Equal(t, before, cur, "%s: the input record changed", where)
			if err != nil {
				require.Equal(t, outcomeRejected, classify(err), where)
				require.Equal(t, commandEffect{}, eff, "%s: a rejected command has an effect", where)
				require.True(t, cmd.IfVersion != nil || old == nil, "%s: rejected %s of a job that exists without if_version: %v", where, cmd.Op, err)
				continue
			}
			if cmd.IfVersion != nil {
				require.True(t, old == nil && *cmd.IfVersion == 0 || old != nil && *cmd.IfVersion == old.Version, "%s: wrong if_version accepted", where)
			}
			if eff.Fire != nil {
				require.Equal(t, codecs.OpFire, cmd.Op, where)
				require.Nil(t, eff.Record, "%s: a manual fire changed the record", where)
				require.False(t, eff.Fire.At.IsZero(), where)
				continue
			}
			if eff.Record == nil {
				continue
			}
			rec := eff.Record
			switch {
			case old != nil:
				require.Equal(t, old.Version+1, rec.Version, "%s: %s of version %d", where, cmd.Op, old.Version)
			case tomb != nil:
				require.Greater(t, rec.Version, tomb.Version, where)
			default:
				require.Equal(t, uint64(offset)+1, rec.Version, where)
			}
			if !rec.Through.IsZero() {
				require.False(t, rec.Status == codecs.StatusCompleted, "%s: a completed job owes fires", where)
			}
			cur = rec
		}
	}
}

// TestApplyCommandRejectsAreCodecsErrors: every error applyCommand returns
// is a *codecs.Error, so resolve rejects it with a stable code.
func TestApplyCommandRejectsAreCodecsErrors(t *testing.T) {
	t.Parallel()
	for _, op := range []string{codecs.OpPut, codecs.OpDelete, codecs.OpPause, codecs.OpResume, codecs.OpFire} {
		_, err := applyCommand(commandInput{Cmd: codecs.Command{Op: op, ID: "j", IfVersion: ver(3)}}, schedule.NewCache(1))
		var ce *codecs.Error
		require.True(t, errors.As(err, &ce), "%s: %v", op, err)
	}
}
