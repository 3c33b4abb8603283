package codecs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// Status of a job record.
type Status uint8

// Job statuses.
const (
	StatusActive    Status = 1
	StatusPaused    Status = 2
	StatusCompleted Status = 3 // a one-shot job that fired, or a job past its end
	// StatusDeleted marks a deleted job's tombstone: kept for
	// DeletedRetention after the delete so that a later put of the same id
	// starts after what the deleted job had handled (no fire_id reused with
	// another payload) and with a greater version. Readers treat it as absent.
	StatusDeleted Status = 4
)

// DeletedRetention is how long a deleted job's tombstone is kept after its
// shard's time passes the delete (the longest misfire grace plus a day).
const DeletedRetention = MaxMisfireGrace + 24*time.Hour

func (s Status) String() string {
	switch s {
	case StatusActive:
		return "active"
	case StatusPaused:
		return "paused"
	case StatusCompleted:
		return "completed"
	case StatusDeleted:
		return "deleted"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Record tags: the first byte of every table value.
const (
	tagJob   = 'J'
	tagShard = 'S'
	// recordFormat is the binary layout version, the second byte: 2 adds
	// Through to job records. Format 1 records (without it) are still read.
	// Format 3 adds a cron job's DST policy after Through; it is written
	// only for a non-default policy, so every other record stays format 2.
	// Format 4 adds, after the DST policy, the jitter, the fire limit and
	// the pause note (see hasFormat4); it is written only when one is set.
	recordFormat  = 2
	recordFormat1 = 1
	recordFormat3 = 3
	recordFormat4 = 4
	// Format 5 is format 4 (its fields always written) followed by tagged
	// extensions to the end of the record (tag byte, length-prefixed body;
	// see readExtensions): written only when the record has exactly one (a
	// backfill in progress, or an owed-since time).
	recordFormat5 = 5
	// Format 6 is format 5 with the count of its extensions before them,
	// so that a record cut after one of them is not read as complete:
	// written for a job with several schedules or exclusions, for a record
	// with two extensions (a backfill beside an owed-since time), and for
	// every record a command wrote (the command's offset, Applied).
	recordFormat6 = 6
	// shardFormat5 is a shard record's format 4 followed by its bucket
	// fan-outs (ShardRecord.Fanouts): written only when it has one.
	shardFormat5 = 5
	// shardFormat6 is format 5 followed by the cursor of the advance under
	// way (ShardRecord.PassAt, PassKey): written only when it is set.
	shardFormat6 = 6
	// shardFormat7 is format 6 (its pass fields always written) followed
	// by the purge horizon (ShardRecord.Purged) and the advances waiting
	// (Queued, QueuedWaits, BegunBy): written only when one is set.
	shardFormat7 = 7
)

// MaxQueuedAdvances bounds ShardRecord.Queued: ten minutes of advances at
// the default resolution of a second.
const MaxQueuedAdvances = 600

// knownFormat reports whether f is a job record format this release reads.
func knownFormat(f byte) bool {
	return f == recordFormat || f == recordFormat1 || f == recordFormat3 || f == recordFormat4 || f == recordFormat5 || f == recordFormat6
}

// hasFormat4 reports whether r has a field only format 4 holds.
func (r *JobRecord) hasFormat4() bool {
	return r.Job.Jitter != 0 || r.Job.MaxFires != 0 || r.Used != 0 || r.Quota != 0 || !r.LimitEnd.IsZero() || r.Pause != (PauseNote{})
}

// JobRecord is the table value of one job.
type JobRecord struct {
	// Version grows with every put, pause and resume and is never reused
	// for a job id, even after a delete and a new put: a job created by a
	// put starts at the put's offset in its partition plus one.
	Version uint64
	Status  Status
	Job     Job
	// NotBefore: no fire at or before this instant (the time of the put or
	// resume that made the job active; scheduled fires before it are not
	// owed).
	NotBefore time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Through, when set, is the time up to which the job's schedule has
	// been handled (fired, or counted as missed): set while an active job
	// still owes fires behind its shard's watermark (a late put or resume,
	// a catch-up in progress), and while a job is paused. When zero, the
	// job has been handled through max(NotBefore, shard watermark). What a
	// job is owed therefore lives in its record, and any instance derives
	// the same due time from the table alone (HandledThrough).
	Through time.Time
	// OwedAt is the shard's time (its watermark, or an advance under way)
	// when a command last set Through (a late put or resume, a pause):
	// zero when Through is zero, in records written before it existed,
	// and when an advance's settle set Through (a job cut at its
	// per-advance bound: handled through the watermark once it is past
	// Through, see owedThrough). An advance that completes to a time after OwedAt has handled
	// the job through that time (a pass never completes while a due entry
	// at or before its time remains, a job's catch-up cut included), so
	// once the shard's watermark is past OwedAt the record owes nothing
	// behind it, whether or not the settle that says so has arrived
	// (HandledThrough, Due): a new owner's index derived from the table
	// agrees with the old owner's.
	OwedAt time.Time
	// Used is how many of the job's scheduled times its fire limit
	// (Job.MaxFires) counted before NotBefore, under earlier definitions
	// or before a pause; 0 without a limit.
	Used uint64
	// Quota is how many scheduled times the fire limit allotted the job
	// when it was last made active (at most MaxFires - Used; fewer when
	// its schedule has fewer left); 0 without a limit.
	Quota uint64
	// LimitEnd, when set, is the last scheduled time the job's fire limit
	// allows: its schedule ends there (see JobSchedule).
	LimitEnd time.Time
	// Pause is why and by whom the job was paused (zero: no note).
	Pause PauseNote
	// Backfill is the job's backfill in progress (nil: none). It does not
	// change Version; a put or delete of the job drops it.
	Backfill *Backfill
	// Applied is the offset in chronos-jobs, plus one, of the last command
	// that changed the record (0: none known, a record written before it
	// existed). Every command of the job's partition before that offset has
	// been handled: one consumed again after a crash is a repeat, not a new
	// command (the scheduler's command path).
	Applied uint64
	// Fanned names the bucket fan-outs whose fire of this job a command
	// sent itself, because the fan-out's chunk may have fired the job
	// before a crash (FanoutRef.Open) and the command changed the job: a
	// chunk run again skips the job for them. Kept while the shard names
	// the fan-out as under way, in tombstones too.
	Fanned []FanoutMark
}

// PauseNote says why and by whom a job was paused.
type PauseNote struct {
	Note string // the caller's reason, as given
	By   string // who paused it, as the history group records a command's actor
}

// HandledThrough returns the time up to which the job has been handled,
// given its shard's watermark w: its next fire is the schedule's first time
// after it.
func (r *JobRecord) HandledThrough(w time.Time) time.Time {
	if !r.Through.IsZero() {
		return r.owedThrough(w)
	}
	if r.NotBefore.After(w) {
		return r.NotBefore
	}
	return w
}

// owedThrough is how far a job whose Through is set has been handled, given
// its shard's watermark w: Through, or, once an advance has completed past
// OwedAt, through w too (a paused job's owed fires only up to its pause,
// NotBefore). Since OwedAt exists (with Applied: every record a command
// writes carries it), Through without OwedAt is an advance's settle: how
// far the pass under way got with a job it cut at its per-advance bound
// (or a settle of an older version); that pass sends the rest before it
// completes, so once the watermark is past Through the job is handled
// through it, though the pass's last settle may still be in flight. Read
// as handled only through Through, a new owner restoring the table before
// that settle owed those times again, and a put sent them with its
// payload (adversary round 26, simulation seed 5100091 x 1500:
// TestAdv26CutSettleInFlightThenPausePutTwoPayloads). A record an earlier
// release wrote (no Applied) owes what its Through says, as before.
func (r *JobRecord) owedThrough(w time.Time) time.Time {
	switch {
	case !r.OwedAt.IsZero() && !r.OwedAt.Before(w):
		return r.Through
	case r.OwedAt.IsZero() && r.Applied == 0:
		return r.Through // written by an earlier release
	}
	done := w
	if r.Status == StatusPaused && r.NotBefore.Before(done) {
		done = r.NotBefore
	}
	if done.After(r.Through) {
		return done
	}
	return r.Through
}

// Due returns when the job is next due in its shard's due index, given the
// shard's watermark w and the job's parsed schedule (nil when its schedule
// does not parse); zero: never. It is the one rule for a record's next due
// time: the scheduler's index, the read API's next fires and a command's
// decision whether a job owes fires behind its shard's time all use it, so
// an index rebuilt from the table alone, on any instance, is the index
// kept up to date record by record.
//
//   - active: the schedule's first time after HandledThrough(w);
//   - paused: the first time after Through (or where an advance past OwedAt
//     got, see owedThrough), if it is at or before the pause (NotBefore): a
//     fire it owed before the pause (none without Through);
//   - deleted: the tombstone's purge, DeletedRetention after NotBefore;
//   - completed, or active or paused without a schedule: never.
func (r *JobRecord) Due(w time.Time, sched schedule.Schedule) time.Time {
	switch r.Status {
	case StatusDeleted:
		return r.NotBefore.Add(DeletedRetention)
	case StatusActive:
		if sched != nil {
			return sched.Next(r.HandledThrough(w))
		}
	case StatusPaused:
		if sched != nil && !r.Through.IsZero() {
			if first := sched.Next(r.owedThrough(w)); !first.IsZero() && !first.After(r.NotBefore) {
				return first
			}
		}
	}
	return time.Time{}
}

// ShardRecord is the table value under a shard key: the time the shard has
// fired up to, and the time of an advance in progress.
type ShardRecord struct {
	Watermark time.Time
	// Advancing is the T of an advance that has begun and not finished
	// (zero: none). A command applied meanwhile treats the times up to it
	// as the old definition's (see the scheduler's put).
	Advancing time.Time
	// Backfills are the backfills in progress of this shard's jobs, sorted
	// by job: each completed advance sends each one a step.
	Backfills []BackfillRef
	// Bulk holds the shard's bulk operations, queued and finished (zero
	// when decoded by DecodeShardHead).
	Bulk BulkState
	// Fanouts are the bucket fan-outs this shard has begun (see
	// FanoutRef): each chunk runs after the member its entry names, so a
	// continuation handled twice (a crash that kept its output, a
	// redelivery) runs the next chunk rather than the same one again.
	Fanouts []FanoutRef
	// PassAt and PassKey are the last due entry (time, job) the advance to
	// Advancing had handled at its last yield (zero: none recorded). Every
	// job whose due entry was at or before it then, in index order, had
	// its fires at that entry and up to PassAt dispatched (its entry moved
	// past them); a store that did not follow that advance (a new owner, a
	// store rebuilt from the table) derives such a job's entry from its
	// record, behind the cursor, and a command there must not owe those
	// fires again.
	PassAt  time.Time
	PassKey string
	// PassCuts are the jobs that advance cut short (more fires than one
	// plan takes, or than a chunk's bytes hold) and has not handled again
	// since, each with the time its entry moved to (at or before
	// Advancing, after the cursor): they were handled only up to it. Every
	// other job whose entry was at or behind the cursor was handled
	// through Advancing. PassCutsLost says more were cut than the record
	// keeps (MaxPassCuts): then only the cursor's time is known.
	PassCuts     []PassCut
	PassCutsLost bool
	// PassOpen says a callback of that advance has begun dispatching and
	// not yielded since: it may have sent the fires of jobs due after the
	// cursor, up to Advancing, before it died. Written, and acknowledged by
	// the changelog, before the callback's first fire; its yield or the
	// pass's completion clears it. A command on a job due in that range
	// first sends the job's fires up to Advancing under its current
	// definition (the scheduler's maybeSent).
	PassOpen bool
	// Purged is the highest Applied of a deleted job's tombstone this
	// shard's advances have purged (0: none). Every command of the
	// partition before that offset was consumed before, so one consumed
	// again after a crash, whose job has no record (purged with its
	// tombstone), is a repeat, not a new job (adversary 17b: a put
	// replayed after its delete's tombstone was purged brought the job
	// back).
	Purged uint64
	// Queued are the Ts of the advances that arrived while the pass to
	// Advancing was under way, ascending, each after it (at most
	// MaxQueuedAdvances: past it the newest replaces the one before): they
	// wait for it, and each has its pass in turn, so passes never overlap
	// and each fire's lateness is measured against the first advance at or
	// after it, as if none had waited. QueuedWaits counts the advances
	// that arrived since the pass under way last yielded: past a bound its
	// continuation is taken for lost, and the next pass begins beside it.
	Queued      []time.Time
	QueuedWaits uint64
	// BegunBy is the T of the advance whose delivery began the pass under
	// way (zero: none recorded): with advances waiting, the earliest of
	// them may have its pass begun by a later one's delivery. Delivered
	// again after a crash that kept the pass's record and lost its
	// continuation, that advance runs the pass again.
	BegunBy time.Time
	// bulkRaw is the encoded bulk state DecodeShardHead left undecoded;
	// EncodeShardRecord writes it back as it was unless Bulk is set.
	bulkRaw []byte
}

// PassCut is a job an advance under way cut short, and where its due
// entry moved (ShardRecord.PassCuts).
type PassCut struct {
	Key string
	To  time.Time
}

// MaxPassCuts bounds ShardRecord.PassCuts.
const MaxPassCuts = 64

// FanoutRef is one bucket fan-out of a shard: the trigger (its id, bucket
// and record time T, which together name it), the announced time it
// started (for the lateness gauge), the member its next chunk continues
// after, and whether every member has fired (Done, then Finished is when
// and Passes how many advances the shard has completed since: it is kept
// a while so that a redelivered trigger is not fanned out again).
//
// Open says a chunk may have gone out past After, up to and including the
// member OpenThrough, without the record that moves After reaching the
// changelog: each chunk writes it, and waits for it, before its fires. A
// command on such a member first sends the member's fire of the fan-out
// itself and names the fan-out in the member's record (JobRecord.Fanned),
// so the chunk run again skips it rather than fire it with what the
// command changed.
type FanoutRef struct {
	TriggerID   string
	Bucket      string
	T           time.Time
	Started     time.Time
	After       string
	Done        bool
	Open        bool
	OpenThrough string
	Finished    time.Time
	Passes      uint64
}

// Covers reports whether key is a member f's open chunk may have fired.
func (f FanoutRef) Covers(key string) bool {
	return f.Open && !f.Done && key > f.After && key <= f.OpenThrough
}

// FanoutMark names a bucket fan-out (trigger id and record time; the bucket
// is the job's) whose fire a command sent for the job itself
// (JobRecord.Fanned).
type FanoutMark struct {
	TriggerID string
	T         time.Time
}

// Marks reports whether m names fan-out f.
func (m FanoutMark) Marks(f FanoutRef) bool {
	return m.TriggerID == f.TriggerID && m.T.Equal(f.T)
}

// Names reports whether f is the fan-out of bucket trigger tr.
func (f FanoutRef) Names(tr ShardTrigger) bool {
	return f.Same(FanoutRef{TriggerID: tr.TriggerID, Bucket: tr.Bucket, T: tr.T})
}

// Same reports whether f and g name the same fan-out (trigger id, bucket
// and record time), wherever each has got.
func (f FanoutRef) Same(g FanoutRef) bool {
	return f.TriggerID == g.TriggerID && f.Bucket == g.Bucket && f.T.Equal(g.T)
}

// ErrNotJob is returned by DecodeJobRecord for a value of another kind.
var ErrNotJob = errors.New("codecs: not a job record")

// IsShardRecord reports whether a table value is a shard record.
func IsShardRecord(b []byte) bool { return len(b) > 0 && b[0] == tagShard }

// EncodeJobRecord returns the binary encoding of r.
func EncodeJobRecord(r *JobRecord) []byte {
	w := make([]byte, 0, 64+len(r.Job.Payload)+len(r.Job.Spec.Cron)+len(r.Job.Bucket))
	format := byte(recordFormat)
	switch {
	case hasScheduleSet(r.Job.Spec) || (r.Backfill != nil && !r.OwedAt.IsZero()) || r.Applied != 0 || len(r.Fanned) > 0:
		// Several extensions: format 6 counts them, so a record cut after
		// one of them is not read as complete (adversary 15c).
		format = recordFormat6
	case r.Backfill != nil || !r.OwedAt.IsZero():
		format = recordFormat5
	case r.hasFormat4():
		format = recordFormat4
	case !r.Job.Spec.DST.IsZero():
		format = recordFormat3
	}
	w = append(w, tagJob, format)
	w = binary.AppendUvarint(w, r.Version)
	w = append(w, byte(r.Status))
	s := r.Job.Spec
	w = appendBytes(w, []byte(s.Cron))
	w = binary.AppendVarint(w, int64(s.Every))
	w = appendTime(w, s.At)
	w = appendBytes(w, []byte(s.TZ))
	w = appendTime(w, s.Start)
	w = appendTime(w, s.End)
	w = appendBytes(w, r.Job.Payload)
	w = appendBytes(w, []byte(r.Job.Bucket))
	w = appendBytes(w, []byte(r.Job.MisfirePolicy))
	w = binary.AppendVarint(w, int64(r.Job.MisfireGrace))
	w = appendTime(w, r.NotBefore)
	w = appendTime(w, r.CreatedAt)
	w = appendTime(w, r.UpdatedAt)
	w = appendTime(w, r.Through)
	if format >= recordFormat3 {
		w = appendBytes(w, []byte(s.DST.Gap))
		w = appendBytes(w, []byte(s.DST.Overlap))
	}
	if format >= recordFormat4 {
		w = binary.AppendVarint(w, int64(r.Job.Jitter))
		w = binary.AppendUvarint(w, uint64(r.Job.MaxFires))
		w = binary.AppendUvarint(w, r.Used)
		w = binary.AppendUvarint(w, r.Quota)
		w = appendTime(w, r.LimitEnd)
		w = appendBytes(w, []byte(r.Pause.Note))
		w = appendBytes(w, []byte(r.Pause.By))
	}
	if format == recordFormat6 {
		w = binary.AppendUvarint(w, uint64(r.extensions()))
	}
	if r.Backfill != nil {
		w = appendBackfill(w, r.Backfill)
	}
	if !r.OwedAt.IsZero() {
		w = appendBytes(append(w, extOwedAt), appendTime(nil, r.OwedAt))
	}
	if hasScheduleSet(s) {
		w = appendScheduleSet(w, s)
	}
	if r.Applied != 0 {
		w = appendBytes(append(w, extApplied), binary.AppendUvarint(nil, r.Applied))
	}
	if len(r.Fanned) > 0 {
		body := binary.AppendUvarint(nil, uint64(len(r.Fanned)))
		for _, m := range r.Fanned {
			body = appendTime(appendBytes(body, []byte(m.TriggerID)), m.T)
		}
		w = appendBytes(append(w, extFanned), body)
	}
	return w
}

// extensions is the number of tagged extensions r's encoding holds.
func (r *JobRecord) extensions() int {
	return boolCount(hasScheduleSet(r.Job.Spec)) + boolCount(r.Backfill != nil) + boolCount(!r.OwedAt.IsZero()) + boolCount(r.Applied != 0) + boolCount(len(r.Fanned) > 0)
}

// DecodeJobRecord parses a job record. The payload aliases b.
func DecodeJobRecord(b []byte) (*JobRecord, error) {
	r := new(JobRecord)
	if err := DecodeJobRecordInto(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeJobRecordInto parses a job record into r, overwriting all of it
// (for a caller that decodes many records and keeps none, such as an
// index pass). The payload aliases b; on an error r holds no record.
func DecodeJobRecordInto(b []byte, r *JobRecord) error {
	*r = JobRecord{}
	if len(b) < 2 || b[0] != tagJob {
		return ErrNotJob
	}
	if !knownFormat(b[1]) {
		return fmt.Errorf("codecs: job record format %d is not supported", b[1])
	}
	rd := reader{b: b[2:]}
	r.Version, r.Status = rd.uvarint(), Status(rd.byte())
	r.Job.Spec = schedule.Spec{Cron: string(rd.bytes()), Every: time.Duration(rd.varint()), At: rd.time(),
		TZ: known(rd.bytes()), Start: rd.time(), End: rd.time()}
	r.Job.Payload = rd.bytes()
	r.Job.Bucket = string(rd.bytes())
	r.Job.MisfirePolicy = known(rd.bytes())
	r.Job.MisfireGrace = time.Duration(rd.varint())
	r.NotBefore, r.CreatedAt, r.UpdatedAt = rd.time(), rd.time(), rd.time()
	if b[1] >= recordFormat {
		r.Through = rd.time()
	}
	if b[1] >= recordFormat3 {
		r.Job.Spec.DST = schedule.DST{Gap: known(rd.bytes()), Overlap: known(rd.bytes())}
	}
	if b[1] >= recordFormat4 {
		r.Job.Jitter = time.Duration(rd.varint())
		r.Job.MaxFires = int(min(rd.uvarint(), math.MaxInt32))
		r.Used = rd.uvarint()
		r.Quota = rd.uvarint()
		r.LimitEnd = rd.time()
		r.Pause = PauseNote{Note: string(rd.bytes()), By: string(rd.bytes())}
	}
	switch b[1] {
	case recordFormat5:
		readExtensions(&rd, r)
	case recordFormat6:
		n := rd.uvarint()
		readExtensions(&rd, r)
		if rd.err == nil && n != uint64(r.extensions()) {
			rd.err = errors.New("extension count does not match")
		}
	}
	if rd.err != nil {
		*r = JobRecord{}
		return fmt.Errorf("codecs: corrupt job record: %w", rd.err)
	}
	if len(rd.b) != 0 {
		*r = JobRecord{}
		return fmt.Errorf("codecs: corrupt job record: %d trailing bytes", len(rd.b))
	}
	if len(r.Job.Payload) == 0 {
		r.Job.Payload = nil
	}
	return nil
}

var jobRecords = sync.Pool{New: func() any { return new(JobRecord) }}

// GetJobRecord returns a record from a pool, for DecodeJobRecordInto; give
// it back with PutJobRecord once nothing refers to it (its payload
// aliases what it was decoded from).
func GetJobRecord() *JobRecord { return jobRecords.Get().(*JobRecord) }

// PutJobRecord gives r back to GetJobRecord's pool.
func PutJobRecord(r *JobRecord) {
	*r = JobRecord{}
	jobRecords.Put(r)
}

// known returns b as a string, without a copy for the values most records
// share (time zones, misfire policies, DST rules).
func known(b []byte) string {
	switch {
	case len(b) == 0:
		return ""
	case string(b) == "UTC":
		return "UTC"
	case string(b) == MisfireFireOnce:
		return MisfireFireOnce
	case string(b) == MisfireSkip:
		return MisfireSkip
	case string(b) == MisfireFireAll:
		return MisfireFireAll
	case string(b) == schedule.GapShift:
		return schedule.GapShift
	case string(b) == schedule.OverlapFirst:
		return schedule.OverlapFirst
	case string(b) == schedule.OverlapLast:
		return schedule.OverlapLast
	case string(b) == schedule.OverlapBoth:
		return schedule.OverlapBoth
	}
	return string(b)
}

// EncodeShardRecord returns the binary encoding of r.
// Format 3 (written only with backfills in progress) adds Backfills;
// format 4 (written only with bulk operations to remember) adds their
// count (maybe 0) and Bulk as length-prefixed JSON.
func EncodeShardRecord(r ShardRecord) []byte {
	bulk := r.bulkRaw
	if !r.Bulk.IsZero() {
		bulk = EncodeInternal(r.Bulk)
	}
	pass := !r.PassAt.IsZero() || r.PassKey != "" || len(r.PassCuts) > 0 || r.PassCutsLost || r.PassOpen
	if len(r.Fanouts) > 0 || pass || r.Purged > 0 || len(r.Queued) > 0 || r.QueuedWaits > 0 || !r.BegunBy.IsZero() {
		// Format 5: format 4's fields, then the fan-outs; format 6: then
		// the pass cursor; format 7: then the purge horizon.
		format := byte(shardFormat5)
		if pass {
			format = shardFormat6
		}
		if r.Purged > 0 || len(r.Queued) > 0 || r.QueuedWaits > 0 || !r.BegunBy.IsZero() {
			format, pass = shardFormat7, true
		}
		w := make([]byte, 0, 64+len(bulk)+64*len(r.Fanouts)+len(r.PassKey))
		w = appendTime(appendTime(append(w, tagShard, format), r.Watermark), r.Advancing)
		w = binary.AppendUvarint(w, uint64(len(r.Backfills)))
		for _, b := range r.Backfills {
			w = appendBytes(appendBytes(w, []byte(b.Job)), []byte(b.ID))
		}
		w = appendBytes(w, bulk)
		w = binary.AppendUvarint(w, uint64(len(r.Fanouts)))
		for _, f := range r.Fanouts {
			w = appendBytes(appendBytes(w, []byte(f.TriggerID)), []byte(f.Bucket))
			w = appendTime(appendTime(w, f.T), f.Started)
			w = appendBytes(w, []byte(f.After))
			done := byte(0) // 1: done, 2: open (older releases read 0 or 1 only)
			switch {
			case f.Done:
				done = 1
			case f.Open:
				done = 2
			}
			w = binary.AppendUvarint(appendTime(append(w, done), f.Finished), f.Passes)
			if done == 2 {
				w = appendBytes(w, []byte(f.OpenThrough))
			}
		}
		if pass {
			w = appendBytes(appendTime(w, r.PassAt), []byte(r.PassKey))
			w = binary.AppendUvarint(w, uint64(len(r.PassCuts)))
			for _, c := range r.PassCuts {
				w = appendTime(appendBytes(w, []byte(c.Key)), c.To)
			}
			flags := byte(0) // 1: PassCutsLost, 2: PassOpen (older releases read 0 or 1 only)
			if r.PassCutsLost {
				flags |= 1
			}
			if r.PassOpen {
				flags |= 2
			}
			w = append(w, flags)
		}
		if format == shardFormat7 {
			w = binary.AppendUvarint(binary.AppendUvarint(w, r.Purged), uint64(len(r.Queued)))
			for _, q := range r.Queued {
				w = appendTime(w, q)
			}
			w = appendTime(binary.AppendUvarint(w, r.QueuedWaits), r.BegunBy)
		}
		return w
	}
	if len(bulk) > 0 {
		w := make([]byte, 0, 32+len(bulk))
		w = appendTime(appendTime(append(w, tagShard, recordFormat4), r.Watermark), r.Advancing)
		w = binary.AppendUvarint(w, uint64(len(r.Backfills)))
		for _, b := range r.Backfills {
			w = appendBytes(appendBytes(w, []byte(b.Job)), []byte(b.ID))
		}
		return appendBytes(w, bulk)
	}
	if len(r.Backfills) > 0 {
		return appendBackfillRefs(appendTime(appendTime([]byte{tagShard, recordFormat3}, r.Watermark), r.Advancing), r.Backfills)
	}
	return appendTime(appendTime([]byte{tagShard, recordFormat}, r.Watermark), r.Advancing)
}

// DecodeShardRecord parses a shard record; nil or empty b is the zero record.
func DecodeShardRecord(b []byte) (ShardRecord, error) { return decodeShardRecord(b, true) }

// DecodeShardHead parses a shard record without its bulk state (Bulk is
// left zero): what every command and advance reads. The bulk state, a JSON
// document of up to 16 queued and 32 finished operations, costs tens of
// microseconds to parse; it is kept as encoded (aliasing b) and
// EncodeShardRecord writes it back unchanged, so a record decoded this
// way and encoded again loses nothing. Only the bulk operations read it
// (DecodeShardRecord). The stored format is unchanged: records written by
// earlier releases decode either way.
func DecodeShardHead(b []byte) (ShardRecord, error) { return decodeShardRecord(b, false) }

func decodeShardRecord(b []byte, bulk bool) (ShardRecord, error) {
	if len(b) == 0 {
		return ShardRecord{}, nil
	}
	if len(b) < 2 || b[0] != tagShard || (b[1] != recordFormat && b[1] != recordFormat1 && b[1] != recordFormat3 && b[1] != recordFormat4 && b[1] != shardFormat5 && b[1] != shardFormat6 && b[1] != shardFormat7) {
		return ShardRecord{}, errors.New("codecs: not a shard record")
	}
	rd := reader{b: b[2:]}
	r := ShardRecord{Watermark: rd.time()}
	if b[1] >= recordFormat {
		r.Advancing = rd.time()
	}
	if b[1] == recordFormat3 {
		r.Backfills = readBackfillRefs(&rd)
	}
	if b[1] == recordFormat4 || b[1] >= shardFormat5 {
		readShardFormat4(&rd, &r, bulk)
	}
	if b[1] >= shardFormat5 {
		readFanouts(&rd, &r)
	}
	if b[1] >= shardFormat6 {
		r.PassAt, r.PassKey = rd.time(), string(rd.bytes())
		n := rd.uvarint()
		if n > uint64(len(rd.b)) {
			rd.err = errShort
		}
		for i := uint64(0); i < n && rd.err == nil; i++ {
			r.PassCuts = append(r.PassCuts, PassCut{Key: string(rd.bytes()), To: rd.time()})
		}
		flags := rd.byte()
		if flags > 3 && rd.err == nil {
			rd.err = errors.New("bad pass flags")
		}
		r.PassCutsLost, r.PassOpen = flags&1 != 0, flags&2 != 0
	}
	if b[1] == shardFormat7 {
		r.Purged = rd.uvarint()
		n := rd.uvarint()
		if n > uint64(len(rd.b)) {
			rd.err = errShort
		}
		for i := uint64(0); i < n && rd.err == nil; i++ {
			r.Queued = append(r.Queued, rd.time())
		}
		r.QueuedWaits = rd.uvarint()
		r.BegunBy = rd.time()
	}
	if rd.err != nil || len(rd.b) != 0 {
		return ShardRecord{}, errors.New("codecs: corrupt shard record")
	}
	return r, nil
}

func appendBytes(w, p []byte) []byte {
	w = binary.AppendUvarint(w, uint64(len(p)))
	return append(w, p...)
}

// appendTime writes 0 for the zero time, else 1 + unix nanoseconds, or, for
// instants that int64 nanoseconds cannot hold (before 1678 or after 2262;
// schedules accept years 1..9999), 2 + unix seconds + nanoseconds.
func appendTime(w []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(w, 0)
	}
	if ns := t.UnixNano(); time.Unix(0, ns).Equal(t) {
		w = append(w, 1)
		return binary.AppendVarint(w, ns)
	}
	w = append(w, 2)
	w = binary.AppendVarint(w, t.Unix())
	return binary.AppendUvarint(w, uint64(t.Nanosecond()))
}

type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errShort
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) || n > math.MaxInt32 {
		r.err = errShort
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) time() time.Time {
	switch r.byte() {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, r.varint()).UTC()
	case 2:
		sec, ns := r.varint(), r.uvarint()
		if r.err == nil && ns >= 1e9 {
			r.err = errors.New("bad nanoseconds")
		}
		if r.err != nil {
			return time.Time{}
		}
		return time.Unix(sec, int64(ns)).UTC()
	default:
		if r.err == nil {
			r.err = errors.New("bad time flag")
		}
		return time.Time{}
	}
}

// JobStatus reads only the status of an encoded job record (for counting
// without decoding); ok is false for anything else.
func JobStatus(b []byte) (Status, bool) {
	if len(b) < 2 || b[0] != tagJob || !knownFormat(b[1]) {
		return 0, false
	}
	_, n := binary.Uvarint(b[2:])
	if n <= 0 || len(b) <= 2+n {
		return 0, false
	}
	return Status(b[2+n]), true
}

// JobBucket reads only the bucket of an encoded job record, without
// decoding the rest (the job view's bucket index, which reads every record
// at the end of a recovery: a full decode was half of that pass). ok is
// false for anything that is not a job record of a known format, or is
// cut before its bucket. It does not check the fields after the bucket:
// a record corrupt past it still gives its bucket, where DecodeJobRecord
// fails (FuzzJobBucket: whatever DecodeJobRecord reads, JobBucket reads
// the same bucket).
func JobBucket(b []byte) (bucket []byte, ok bool) {
	if len(b) < 2 || b[0] != tagJob || !knownFormat(b[1]) {
		return nil, false
	}
	rd := reader{b: b[2:]}
	rd.uvarint()  // version
	rd.byte()     // status
	rd.bytes()    // cron
	rd.varint()   // every
	rd.skipTime() // at
	rd.bytes()    // tz
	rd.skipTime() // start
	rd.skipTime() // end
	rd.bytes()    // payload
	bucket = rd.bytes()
	return bucket, rd.err == nil
}

// skipTime reads past a time as time does, without building it.
func (r *reader) skipTime() {
	switch r.byte() {
	case 0:
	case 1:
		r.varint()
	case 2:
		r.varint()
		if ns := r.uvarint(); r.err == nil && ns >= 1e9 {
			r.err = errors.New("bad nanoseconds")
		}
	default:
		if r.err == nil {
			r.err = errors.New("bad time flag")
		}
	}
}

// readShardFormat4 reads what format 4 of a shard record adds after the
// times: backfill refs (a count, maybe 0) and the bulk state.
func readShardFormat4(rd *reader, r *ShardRecord, bulk bool) {
	n := rd.uvarint()
	if n > uint64(len(rd.b)) {
		rd.err = errShort
		return
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		r.Backfills = append(r.Backfills, BackfillRef{Job: string(rd.bytes()), ID: string(rd.bytes())})
	}
	js := rd.bytes()
	if !bulk {
		if len(js) > 0 {
			r.bulkRaw = js
		}
		return
	}
	if rd.err == nil && len(js) > 0 { // format 5 may have none
		// Into a variable of its own: &r.Bulk handed to encoding/json
		// would move every decoded record to the heap, a head decoded for
		// each command included (1.4 GB in 5 minutes of a 10M
		// registration).
		var st BulkState
		if err := json.Unmarshal(js, &st); err != nil {
			rd.err = err
		}
		r.Bulk = st
	}
}

// readFanouts reads a shard record's bucket fan-outs (format 5).
func readFanouts(rd *reader, r *ShardRecord) {
	n := rd.uvarint()
	if n > uint64(len(rd.b)) {
		rd.err = errShort
		return
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		f := FanoutRef{TriggerID: string(rd.bytes()), Bucket: string(rd.bytes())}
		f.T, f.Started = rd.time(), rd.time()
		f.After = string(rd.bytes())
		switch rd.byte() {
		case 0:
		case 1:
			f.Done = true
		case 2:
			f.Open = true
		default:
			if rd.err == nil {
				rd.err = errors.New("bad fan-out flag")
			}
		}
		f.Finished, f.Passes = rd.time(), rd.uvarint()
		if f.Open {
			f.OpenThrough = string(rd.bytes())
		}
		r.Fanouts = append(r.Fanouts, f)
	}
}
