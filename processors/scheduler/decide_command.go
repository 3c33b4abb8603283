package scheduler

import (
	"fmt"
	"strconv"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// commandInput is everything a command's decision reads: the command, the
// job's record as the table holds it, the shard's record, and, when owedUpTo
// says the job must first settle what it owes, the time it is handled
// through once it has (Scheduler.handled dispatches those fires).
type commandInput struct {
	Cmd       codecs.Command
	Old       *codecs.JobRecord // the job's live record (nil: none, or deleted)
	Tomb      *codecs.JobRecord // the deleted job of this id, still remembered (nil: none)
	Shard     codecs.ShardRecord
	Handled   time.Time // see owedUpTo; zero when it says nothing is owed
	TS        time.Time // the command's record time, UTC
	Actor     string    // the command's ActorHeader (who sent it), for a pause's note
	Partition int32
	Offset    int64
}

// commandEffect is what a command does: the job's new record and a manual
// fire to dispatch, each nil when there is none.
type commandEffect struct {
	Record *codecs.JobRecord
	Fire   *manualFire
	// Loop goes to the shard's key through the loopback (a backfill
	// joining or leaving its registry; nil: none).
	Loop *codecs.ShardTrigger
}

// manualFire is a manual fire of the job at its command's time.
type manualFire struct {
	TriggerID string
	At        time.Time
	Payload   []byte
}

// liveRecord splits a job's current record into its live record and a
// deleted job's tombstone (at most one of them is not nil).
func liveRecord(cur *codecs.JobRecord) (old, tomb *codecs.JobRecord) {
	if cur != nil && cur.Status == codecs.StatusDeleted {
		return nil, cur
	}
	return cur, nil
}

// checkCommand returns the reject of a command that cannot apply to old
// (a version conflict, an unknown job), before anything is dispatched.
func checkCommand(cmd codecs.Command, old *codecs.JobRecord) error {
	if cmd.IfVersion != nil {
		var have uint64
		if old != nil {
			have = old.Version
		}
		if have != *cmd.IfVersion {
			return &codecs.Error{Code: codecs.CodeVersionConflict, Field: "if_version",
				Reason: fmt.Sprintf("job %q is at version %d, not %d", cmd.ID, have, *cmd.IfVersion)}
		}
	}
	if old == nil && (cmd.Op == codecs.OpPause || cmd.Op == codecs.OpResume || cmd.Op == codecs.OpFire ||
		cmd.Op == codecs.OpBackfill || cmd.Op == codecs.OpCancelBackfill) {
		return &codecs.Error{Code: codecs.CodeUnknownJob, Field: "id", Reason: "no job " + strconv.Quote(cmd.ID)}
	}
	return nil
}

// owedUpTo reports whether old must settle what it owes before cmd changes
// it, and up to when (Scheduler.handled): an update, a pause of an active
// job, a resume of a paused one first dispatch what the job owes, and a
// delete of a paused job asks how far its owed fires went.
func owedUpTo(cmd codecs.Command, old *codecs.JobRecord, ts time.Time) (time.Time, bool) {
	if old == nil {
		return time.Time{}, false
	}
	switch {
	case cmd.Op == codecs.OpPut:
		return farFuture, true
	case cmd.Op == codecs.OpPause && old.Status == codecs.StatusActive:
		return ts, true
	case cmd.Op == codecs.OpResume && old.Status == codecs.StatusPaused:
		return farFuture, true
	case cmd.Op == codecs.OpDelete && old.Status == codecs.StatusPaused && !old.Through.IsZero():
		return farFuture, true // handled answers without dispatching (a paused job's fires wait for advances)
	}
	return time.Time{}, false
}

// applyCommand decides what a command does to a job's record. It changes
// nothing it is given. An invalid command (checkCommand) is an error and
// has no effect.
func applyCommand(in commandInput, schedules *schedule.Cache) (commandEffect, error) {
	cmd, old, ts := in.Cmd, in.Old, in.TS
	if err := checkCommand(cmd, old); err != nil {
		return commandEffect{}, err
	}
	switch cmd.Op {
	case codecs.OpPut:
		return commandEffect{Record: putRecord(in, schedules)}, nil
	case codecs.OpDelete:
		if old == nil {
			return commandEffect{}, nil
		}
		now := shardNow(in.Shard)
		// Whatever an active deleted job had or had not dispatched up to the
		// shard's time, a new job under its id starts after it. A paused one
		// dispatched nothing after its pause: a late re-put owes those times.
		h := later(old.HandledThrough(in.Shard.Watermark), now)
		if _, owed := owedUpTo(cmd, old, ts); owed {
			h = in.Handled
		}
		return commandEffect{Record: &codecs.JobRecord{Status: codecs.StatusDeleted, Version: old.Version + 1,
			Job: codecs.Job{Spec: old.Job.Spec}, Through: h, NotBefore: now, CreatedAt: old.CreatedAt, UpdatedAt: ts}}, nil
	case codecs.OpPause:
		if old.Status != codecs.StatusActive {
			return commandEffect{}, nil
		}
		// The pause applies from its record time: fires the job owed up to
		// ts and has not dispatched yet (an advance under way, a catch-up)
		// still go out; NotBefore keeps ts for that.
		rec := *old
		rec.Status, rec.Version, rec.UpdatedAt, rec.Through, rec.NotBefore = codecs.StatusPaused, old.Version+1, ts, in.Handled, ts
		rec.OwedAt = shardNow(in.Shard)
		rec.Pause = codecs.PauseNote{Note: cmd.Note, By: in.Actor}
		return commandEffect{Record: &rec}, nil
	case codecs.OpResume:
		if old.Status != codecs.StatusPaused {
			return commandEffect{}, nil
		}
		from := later(dueFrom(schedules, cmd.ID, old, ts), in.Handled)
		if owesBeforePause(cmd.ID, old, in.Handled, schedules) {
			// It still owes fires from before its pause: they are not
			// dropped (the times of the pause go out with them).
			from = in.Handled
		}
		rec := *old
		rec.Version, rec.UpdatedAt = old.Version+1, ts
		rec.Used = limitUsed(schedules, cmd.ID, old, in.Handled)
		rec.Backfill = resumedBackfill(old.Backfill)
		activate(cmd.ID, &rec, from, in.Shard, schedules)
		return commandEffect{Record: &rec}, nil
	case codecs.OpFire:
		// Its fire_id is stable across redelivery: the command's trigger
		// id, or one derived from the record's partition and offset.
		f := &manualFire{TriggerID: cmd.TriggerID, At: ts, Payload: old.Job.Payload}
		if f.TriggerID == "" {
			f.TriggerID = "m-" + strconv.Itoa(int(in.Partition)) + "-" + strconv.FormatInt(in.Offset, 10)
		}
		if cmd.Payload != nil {
			f.Payload = cmd.Payload
		}
		return commandEffect{Fire: f}, nil
	case codecs.OpBackfill:
		return startBackfill(in, schedules)
	case codecs.OpCancelBackfill:
		return cancelBackfill(in), nil
	}
	return commandEffect{}, nil
}

// putRecord is the record a put makes: a new job, an update of old, or a
// new job under a deleted one's id.
func putRecord(in commandInput, schedules *schedule.Cache) *codecs.JobRecord {
	cmd, old, ts := in.Cmd, in.Old, in.TS
	rec := &codecs.JobRecord{Job: cmd.Job, CreatedAt: ts, UpdatedAt: ts, Version: uint64(max(in.Offset, 0)) + 1}
	from := dueFrom(schedules, cmd.ID, rec, ts)
	if in.Tomb != nil {
		// A new job under a deleted one's id: it starts after what the
		// deleted job handled (none of its fire_ids is reused with
		// another payload), at a greater version.
		from = later(from, in.Tomb.Through)
		rec.Version = max(rec.Version, in.Tomb.Version+1)
	}
	if old != nil {
		rec.Version, rec.CreatedAt = old.Version+1, old.CreatedAt
		// An update continues exactly where the old definition stopped: a
		// late one re-sends nothing, one ahead of the shard's time drops
		// none of the times in between (they go out under the new
		// definition). A paused job stays clear of its pause; a completed
		// one is put again like a new job, from its ts (but never before
		// what it handled).
		from = in.Handled
		if old.Status != codecs.StatusActive && !owesBeforePause(cmd.ID, old, in.Handled, schedules) {
			from = later(dueFrom(schedules, cmd.ID, rec, ts), in.Handled)
		}
		// A changed jitter moves due times: the new definition owes the
		// scheduled times the old one had not handled.
		from = rebase(schedules, cmd.ID, old, rec, from)
		if old.Status != codecs.StatusCompleted && rec.Job.MaxFires > 0 {
			// The times its fire limit counted stay counted.
			rec.Used = limitUsed(schedules, cmd.ID, old, in.Handled)
		}
	}
	activate(cmd.ID, rec, from, in.Shard, schedules)
	return rec
}

// activate makes rec active and owe the fires of its schedule after from
// (its handled-through time). When the first of them is at or before the
// shard's time (the command was consumed late, or an advance is under way),
// the record says so in Through, so that any instance rebuilding the due
// index from the table owes the same fires; those are then dispatched by
// the next advance as late fires under the misfire policy. A schedule with
// no fire after from completes the job; an invalid one leaves it active
// (the indexer logs it; the job never fires).
func activate(key string, rec *codecs.JobRecord, from time.Time, shard codecs.ShardRecord, schedules *schedule.Cache) {
	rec.Status, rec.NotBefore, rec.Through, rec.OwedAt, rec.Pause = codecs.StatusActive, from, time.Time{}, time.Time{}, codecs.PauseNote{}
	if allot(schedules, key, rec, from) {
		rec.Status = codecs.StatusCompleted
		return
	}
	sched, err := jobSchedule(schedules, key, rec)
	if err != nil {
		return
	}
	// Owing everything after from since the shard's time now, it is due
	// at its first time after it (the same rule as the index's,
	// codecs.JobRecord.Due): an advance that completes past that time
	// sends what it owes (codecs.JobRecord.OwedAt).
	rec.Through, rec.OwedAt = from, shardNow(shard)
	first := rec.Due(shard.Watermark, sched)
	switch {
	case first.IsZero():
		rec.Status, rec.Through, rec.OwedAt = codecs.StatusCompleted, time.Time{}, time.Time{}
	case first.After(rec.OwedAt):
		// Nothing owed behind the shard's time: an ordinary job, due at
		// the same first time from max(NotBefore, watermark).
		rec.Through, rec.OwedAt = time.Time{}, time.Time{}
	}
}

// owesBeforePause reports whether rec, a paused job handled through h, still
// owes fires from before its pause (NotBefore is the pause's time).
func owesBeforePause(key string, rec *codecs.JobRecord, h time.Time, schedules *schedule.Cache) bool {
	if rec.Status != codecs.StatusPaused {
		return false
	}
	sched, err := jobSchedule(schedules, key, rec)
	if err != nil {
		return false
	}
	first := sched.Next(h)
	return !first.IsZero() && !first.After(rec.NotBefore)
}
