package codecs

import (
	"encoding/json"
	"fmt"
	"time"
)

// Tick is a chronos-clock record: one instance's wall time.
type Tick struct {
	Time     time.Time `json:"t"`
	Instance string    `json:"instance,omitempty"`
}

// Kinds of shard triggers and loopback messages.
const (
	KindAdvance  = "advance"  // fire everything due up to T
	KindBucket   = "bucket"   // fire the active jobs of a bucket
	KindComplete = "complete" // loopback: mark a one-shot job completed
	KindSettle   = "settle"   // loopback: record how far a job that owed fires has been handled
	KindPurge    = "purge"    // loopback: remove a deleted job's tombstone after its retention
	// Backfills (loopback only): a step of a job's backfill (job key; T
	// is the shard time that sends it, TriggerID the backfill's ID), and a
	// shard's registry of backfills in progress gaining or losing one
	// (shard key; Job and TriggerID name it).
	KindBackfill      = "backfill"
	KindBackfillJoin  = "backfill_join"
	KindBackfillLeave = "backfill_leave"
	// KindBulk is a bulk operation (Op pause, resume or delete) on the jobs
	// of Bucket or of the ids starting with Prefix; its continuations carry
	// the cursor and the counts so far.
	KindBulk = "bulk"
	// Loopbacks to the shard key of a bulk operation in progress
	// (TriggerID): one of its commands lost to a newer version of its job
	// (bulk_skip; Offset is the command's offset on chronos-jobs plus one),
	// and its barrier reached (bulk_done): every skip of its commands is
	// ahead of it on the loopback, so its counts are complete.
	KindBulkSkip = "bulk_skip"
	KindBulkDone = "bulk_done"
)

// ShardTrigger is a chronos-shard-triggers record (key = a shard key) and
// also the scheduler's loopback message for continuing a bounded fan-out.
type ShardTrigger struct {
	Kind string    `json:"kind"`
	T    time.Time `json:"t"`
	// Continuation cursor (loopback only): the fan-out resumes after this
	// due entry, or after this bucket member.
	AfterAt  time.Time `json:"after_at,omitzero"`
	AfterKey string    `json:"after_key,omitempty"`
	// Started, on a bucket continuation: the announced time the bucket's
	// fan-out started on this partition, which the lateness gauge counts
	// from whichever instance continues it. On an advance from the
	// loopback: the start of a pass that waited for the one before it (the
	// scheduler's startQueued), set to T.
	Started time.Time `json:"started,omitzero"`
	// Bucket fires.
	Bucket    string          `json:"bucket,omitempty"`
	TriggerID string          `json:"trigger_id,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	// Complete, settle and purge: the job version concerned (settle: T is
	// how far the job has now been handled).
	Version uint64 `json:"version,omitempty"`
	// Jitter (settle only): the jitter of the version that fired. T is
	// one of its due times, which another version's jitter places
	// elsewhere (a settle then applies only to a version with the same).
	Jitter time.Duration `json:"jitter,omitempty"`
	// Job is the job of a backfill_join or backfill_leave.
	Job string `json:"job,omitempty"`
	// Bulk operations: the op, the id prefix (instead of Bucket), a
	// pause's note, who sent it (the record's ActorHeader), and, in
	// continuations, how many jobs the shard has matched and how many it
	// has sent the op to so far.
	Op      string `json:"op,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	Note    string `json:"note,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Matched int64  `json:"matched,omitempty"`
	Changed int64  `json:"changed,omitempty"`
	// Step numbers a bulk walk's chunks (0 for the first); the shard
	// record's queue head keeps the step to run next, so a continuation
	// handled again (a crash, a rebalance, a resent operation) runs no
	// chunk twice. Walked: the walk is done and its barrier written.
	Step   int64 `json:"step,omitempty"`
	Walked bool  `json:"walked,omitempty"`
	// Nonce is a bulk operation's secret: random, drawn by the shard that
	// queues the operation, kept in its queue entry (the scheduler table)
	// and written only in the operation's barrier, never in its
	// continuations. A barrier without it is forged and is rejected.
	Nonce string `json:"nonce,omitempty"`
	// Skipped counts a bulk operation's commands that lost to a newer
	// version of their job (if_version); Offset is, in a bulk_skip, the
	// skipped command's offset plus one, and in the queue entry the
	// highest one counted (a skip repeated after a crash is not counted
	// again).
	Skipped int64 `json:"skipped,omitempty"`
	Offset  int64 `json:"offset,omitempty"`
}

// EncodeInternal marshals an internal message (Tick or ShardTrigger).
func EncodeInternal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for these types
		panic(err)
	}
	return b
}

// DecodeTick parses a clock tick.
func DecodeTick(b []byte) (Tick, error) {
	var t Tick
	if err := json.Unmarshal(b, &t); err != nil {
		return Tick{}, jsonError(err)
	}
	if t.Time.IsZero() {
		return Tick{}, errorf(CodeMalformed, "t", "tick without a time")
	}
	return t, nil
}

// DecodeShardTrigger parses a shard trigger or loopback message.
func DecodeShardTrigger(b []byte) (ShardTrigger, error) {
	var s ShardTrigger
	if err := json.Unmarshal(b, &s); err != nil {
		return ShardTrigger{}, jsonError(err)
	}
	switch s.Kind {
	case KindAdvance, KindBucket, KindComplete, KindSettle, KindPurge, KindBackfill, KindBackfillJoin, KindBackfillLeave, KindBulk, KindBulkSkip, KindBulkDone:
	default:
		return ShardTrigger{}, errorf(CodeUnknownOp, "kind", "unknown shard trigger kind %q", s.Kind)
	}
	return s, nil
}

// String is a short description for logs.
func (s ShardTrigger) String() string {
	return fmt.Sprintf("%s T=%s bucket=%q after=%s/%q", s.Kind, s.T.Format(time.RFC3339Nano), s.Bucket, s.AfterAt.Format(time.RFC3339Nano), s.AfterKey)
}
