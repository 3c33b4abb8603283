package scheduler

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// A bulk operation (pause, resume or delete every job of a bucket or of an
// id prefix) reaches every shard like a bucket trigger. Each shard walks
// its jobs of the bucket (bucket index; with a prefix too, those of them
// whose id has it) or of the prefix (table keys), one
// chunk per callback, and writes to chronos-jobs one ordinary command for
// each job the op changes (pause: an active job; resume: a paused one;
// delete: any live one), with the operation's sender as the command's
// actor. The commands then take the path of every command: a paused job
// first dispatches what it owed, a pause keeps its note, the history group
// records each change, a job with a backfill keeps it or drops it as for a
// single command. The continuation (a loopback to the shard key) carries
// the cursor and the counts, and is written only after the chunk's
// commands are acknowledged (produced by the Producer, as fires are), so
// a crash or a rebalance repeats at most a chunk, whose jobs already
// changed are then skipped. After the last chunk, a barrier
// keyed by the shard key follows the commands on chronos-jobs; the
// operation finishes (its counts recorded, the next queued one started)
// when the scheduler reaches it, so each operation's walk sees the effects
// of the one before.

// bulkChanges reports whether op changes a job whose record is rec: a
// pause changes an active job, a resume a paused one, a delete every job
// that is not deleted.
func bulkChanges(op string, rec *codecs.JobRecord) bool {
	switch op {
	case codecs.BulkPause:
		return rec.Status == codecs.StatusActive
	case codecs.BulkResume:
		return rec.Status == codecs.StatusPaused
	case codecs.BulkDelete:
		return rec.Status != codecs.StatusDeleted
	}
	return false
}

// bulkChunk is what one chunk of a bulk operation does.
type bulkChunk struct {
	Commands []bulkCommand // the commands to write to chronos-jobs
	Matched  int64         // jobs of the bucket or prefix seen (tombstones and shard records left out)
	Last     string        // the last key handled
	More     bool          // keys may follow Last
}

// bulkCommand is one command of a bulk operation: to job Key, at the
// version the walk saw (its if_version, so that a put in between wins).
type bulkCommand struct {
	Key     string
	Version uint64
}

// decideBulk decides a chunk of bulk operation tr over keys and their
// table values (nil: gone), in key order: each job that hashes to
// partition p of n and that the op changes gets a command (cmdBytes long,
// beyond its key). It stops after maxBytes of commands (after at least
// one) and reports More then.
func decideBulk(tr codecs.ShardTrigger, keys []string, values [][]byte, cmdBytes int, p, n int32, maxBytes int) bulkChunk {
	c := bulkChunk{Last: tr.AfterKey}
	size := 0
	for i, k := range keys {
		if size >= maxBytes {
			c.More = true
			break
		}
		c.Last = k
		if len(values[i]) == 0 || codecs.IsShardRecord(values[i]) {
			continue
		}
		rec, err := codecs.DecodeJobRecord(values[i])
		if err != nil || rec.Status == codecs.StatusDeleted {
			continue
		}
		if (tr.Bucket != "" && rec.Job.Bucket != tr.Bucket) || !strings.HasPrefix(k, tr.Prefix) {
			continue // the index moved on (a put to another bucket in between), or not the prefix
		}
		c.Matched++
		// A job an earlier release stored on a wrong partition cannot be
		// reached by a command keyed by its id; it is counted as matched.
		if bulkChanges(tr.Op, rec) && topology.Partition(k, n) == p {
			c.Commands = append(c.Commands, bulkCommand{Key: k, Version: rec.Version})
			size += len(k) + cmdBytes + bulkMsgOverhead
		}
	}
	return c
}

// bulkMsgOverhead is the estimated per-record size of a command beyond
// its key and value (headers, framing) for the chunk's byte budget, and
// bulkCmdOverhead the size of a command's value beyond its op and note.
const (
	bulkMsgOverhead = 64 + 2*len(codecs.BulkHeader) + 100
	bulkCmdOverhead = 64
)

// bulkEnqueue queues bulk operation tr (a shard trigger) on this shard:
// a shard runs its bulk operations one at a time, in the order they
// arrived, so a resume sent after a pause of the same jobs is never undone
// by the pause's remaining chunks. A redelivered trigger is not queued
// twice (if it is in progress, its first chunk is sent again: the one sent
// before a crash may be lost); a full queue rejects it.
func (s *Scheduler) bulkEnqueue(ctx goka.Context, tr codecs.ShardTrigger) (err error) {
	shard := s.decodeShardBulk(ctx.Key(), valueBytes(ctx))
	q := shard.Bulk.Queue
	if r, done := shard.Bulk.Finished(tr.TriggerID); done {
		return sameBulkOp(tr, r.Op, r.Bucket, r.Prefix)
	}
	for _, e := range q {
		if e.TriggerID == tr.TriggerID {
			if err := sameBulkOp(tr, e.Op, e.Bucket, e.Prefix); err != nil {
				return err
			}
		}
	}
	if shard.Bulk.Queued(tr.TriggerID) {
		// Queued at a first delivery whose loopback may have been lost
		// (a crash after the table write): start it again. Once a chunk
		// has run, its own continuations carry the walk (bulkRun).
		if q[0].TriggerID == tr.TriggerID && q[0].Step == 0 {
			ctx.Loopback(ctx.Key(), codecs.EncodeInternal(continuation(q[0])))
		}
		return nil
	}
	if len(q) >= codecs.MaxBulkQueued {
		return &codecs.Error{Code: codecs.CodeInvalidField, Field: "op", Reason: fmt.Sprintf(
			"partition %d already has %d bulk operations queued (the most is %d); send it again when they are done",
			ctx.Partition(), len(q), codecs.MaxBulkQueued)}
	}
	tr.AfterKey, tr.Matched, tr.Changed, tr.Step, tr.Walked = "", 0, 0, 0, false
	if tr.Nonce, err = newBulkNonce(); err != nil {
		return err
	}
	shard.Bulk.Queue = append(append([]codecs.ShardTrigger(nil), q...), tr)
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	if len(shard.Bulk.Queue) == 1 {
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(continuation(tr)))
	}
	return nil
}

// continuation is the loopback copy of queue entry tr: without its nonce,
// which only the table and the barrier carry.
func continuation(tr codecs.ShardTrigger) codecs.ShardTrigger {
	tr.Nonce = ""
	return tr
}

// newBulkNonce draws a bulk operation's nonce: 128 random bits, hex.
func newBulkNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("scheduler: drawing a bulk operation's nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// sameBulkOp returns nil when tr repeats the operation op on bucket and
// prefix that its trigger id already names on this shard (a repeat is
// skipped), and a reject otherwise: reusing a trigger id for another
// operation would be skipped silently (adversary 14).
func sameBulkOp(tr codecs.ShardTrigger, op, bucket, prefix string) error {
	if tr.Op == op && tr.Bucket == bucket && tr.Prefix == prefix {
		return nil
	}
	return &codecs.Error{Code: codecs.CodeInvalidField, Field: "trigger_id", Reason: fmt.Sprintf(
		"trigger id %q already names another bulk operation on this shard (%s of bucket %q, prefix %q): use a new trigger_id",
		tr.TriggerID, op, bucket, prefix)}
}

// bulkRun runs one chunk of the bulk operation in progress (tr, a
// loopback with its cursor and counts) and continues through the loopback
// while keys remain; the last chunk records the counts in the shard
// record and starts the next queued operation. A loopback of an operation
// not in progress (a duplicate after a crash) does nothing.
func (s *Scheduler) bulkRun(ctx goka.Context, tr codecs.ShardTrigger) error {
	if ctx.Context().Err() != nil {
		return errRevoked
	}
	if want := s.shardKeys[ctx.Partition()]; ctx.Key() != want {
		return &codecs.Error{Code: codecs.CodeInvalidID, Reason: fmt.Sprintf("bulk key %q is not partition %d's shard key %q", ctx.Key(), ctx.Partition(), want)}
	}
	shard := s.decodeShardBulk(ctx.Key(), valueBytes(ctx))
	q := shard.Bulk.Queue
	if len(q) == 0 || q[0].TriggerID != tr.TriggerID {
		return nil
	}
	head := q[0]
	switch {
	case tr.Step == head.Step && !head.Walked:
		// The step to run next.
	case tr.Step+1 == head.Step:
		// The step before the stored one, handled again: its chunk ran
		// and is in the table, but its output (the next continuation, or
		// the barrier) may have been lost with a crash. Send it again from
		// the table rather than run the chunk again; if it was not lost,
		// the copy finds its step taken and does the same (one spare
		// continuation until the walk ends, no chunk run twice).
		if head.Walked {
			ctx.Emit(s.cfg.Layout.Jobs(), ctx.Key(), codecs.EncodeInternal(head))
		} else {
			ctx.Loopback(ctx.Key(), codecs.EncodeInternal(continuation(head)))
		}
		return nil
	default:
		return nil // an older step, or a continuation of a finished walk
	}
	st := s.Store(ctx.Partition())
	if st == nil {
		return fmt.Errorf("scheduler: no open store for partition %d", ctx.Partition())
	}
	keys, more, err := bulkKeys(st, tr, s.cfg.ChunkSize)
	if err != nil {
		return err
	}
	values, err := st.GetMany(keys)
	if err != nil {
		return err
	}
	next := head
	if next.Nonce == "" {
		// Queued by a release before nonces: it gets one before its
		// commands and barrier are written.
		if next.Nonce, err = newBulkNonce(); err != nil {
			return err
		}
	}
	c := decideBulk(tr, keys, values, len(tr.Op)+len(tr.Note)+bulkCmdOverhead, ctx.Partition(), s.cfg.Layout.Partitions, s.cfg.ChunkBytes)
	msgs := make([]Msg, 0, len(c.Commands))
	for _, bc := range c.Commands {
		value, err := codecs.EncodeCommand(codecs.CommandMsg{Op: tr.Op, Note: tr.Note, IfVersion: &bc.Version})
		if err != nil {
			return err
		}
		h := map[string][]byte{codecs.BulkHeader: []byte(codecs.BulkMAC(next.Nonce, tr.TriggerID, bc.Key, bc.Version) + " " + tr.TriggerID)}
		if tr.Actor != "" {
			h[codecs.ActorHeader] = []byte(tr.Actor)
		}
		msgs = append(msgs, Msg{Key: bc.Key, Value: value, Headers: h})
	}
	// The chunk's commands are acknowledged before the table records the
	// step: goka writes the table (its changelog) and what a callback
	// emits independently, so a process killed between the two could
	// leave the step recorded and its commands lost, and the redelivered
	// continuation, finding its step taken, would not send them again
	// (TestBulkKill9Finishes lost 2 of 3000 so). A crash after the acks
	// and before the table write runs the chunk again: its commands
	// repeat, and a repeat is dropped uncounted (bulkRepeat).
	if len(msgs) > 0 {
		if err := s.cfg.Producer.ProduceSync(ctx.Context(), string(s.cfg.Layout.Jobs()), msgs); err != nil {
			return fmt.Errorf("scheduler: producing bulk commands: %w", err)
		}
	}
	s.cfg.Metrics.bulked(tr.Op, len(c.Commands))
	next.AfterKey, next.Matched, next.Changed = c.Last, tr.Matched+c.Matched, tr.Changed+int64(len(c.Commands))
	next.Step = tr.Step + 1
	more = more || c.More
	if !more {
		next.AfterKey, next.Walked = "", true
	}
	// The queue head keeps the step to run next (with the cursor and
	// counts), written with this chunk's commands.
	shard.Bulk.Queue = append([]codecs.ShardTrigger{next}, q[1:]...)
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	if more {
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(continuation(next)))
		return nil
	}
	// The walk is done; the operation is finished once its commands are
	// applied: the barrier goes to chronos-jobs behind them (the same
	// partition, in order: one idempotent producer), and only when the
	// scheduler reaches it does the next queued operation start, so its
	// walk sees this one's effects.
	ctx.Emit(s.cfg.Layout.Jobs(), ctx.Key(), codecs.EncodeInternal(next))
	return nil
}

// bulkBarrier handles a bulk operation's barrier (a chronos-jobs record
// keyed by the shard key, written behind the operation's last commands):
// every command of the operation has been applied, so the shard records
// its counts and starts the next queued operation. A barrier of an
// operation not in progress (a repeat after a crash) does nothing.
func (s *Scheduler) bulkBarrier(ctx goka.Context, raw []byte) error {
	tr, err := s.decodeTrigger(raw)
	if err != nil {
		return invalid(err)
	}
	if tr.Kind != codecs.KindBulk {
		return invalid(&codecs.Error{Code: codecs.CodeReservedID, Field: "id", Reason: "the key belongs to a shard record"})
	}
	shard := s.decodeShardBulk(ctx.Key(), valueBytes(ctx))
	q := shard.Bulk.Queue
	if len(q) == 0 || q[0].TriggerID != tr.TriggerID {
		return nil
	}
	head := q[0]
	if err := checkBarrier(head, tr); err != nil {
		return invalid(err)
	}
	// Every command is applied; the skips of those that lost to a newer
	// version are on the loopback ahead of this (one producer, one
	// partition): bulk_done finishes behind them.
	ctx.Loopback(ctx.Key(), codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBulkDone, T: head.T, TriggerID: head.TriggerID}))
	return nil
}

// bulkDone finishes the bulk operation in progress (tr names it) once its
// barrier has been reached: the shard records its counts, the table's own,
// and starts the next queued operation. A repeat does nothing.
func (s *Scheduler) bulkDone(ctx goka.Context, tr codecs.ShardTrigger) error {
	if want := s.shardKeys[ctx.Partition()]; ctx.Key() != want {
		return &codecs.Error{Code: codecs.CodeInvalidID, Reason: fmt.Sprintf("bulk key %q is not partition %d's shard key %q", ctx.Key(), ctx.Partition(), want)}
	}
	shard := s.decodeShardBulk(ctx.Key(), valueBytes(ctx))
	q := shard.Bulk.Queue
	if len(q) == 0 || q[0].TriggerID != tr.TriggerID || !q[0].Walked {
		return nil
	}
	head := q[0]
	shard.Bulk = shard.Bulk.Finish(head.Matched, head.Changed, head.Skipped)
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	if len(shard.Bulk.Queue) > 0 {
		ctx.Loopback(ctx.Key(), codecs.EncodeInternal(continuation(shard.Bulk.Queue[0])))
	}
	s.cfg.Logger.Info("bulk operation done on this shard", "partition", ctx.Partition(), "op", head.Op,
		"target", codecs.BulkTarget(head.Bucket, head.Prefix), "trigger_id", head.TriggerID,
		"matched", head.Matched, "commands", head.Changed, "skipped", head.Skipped)
	return nil
}

// bulkSkipped counts a command of the bulk operation in progress that
// lost to a newer version of its job (a bulk_skip loopback), once: a
// repeat after a crash carries an offset already counted.
func (s *Scheduler) bulkSkipped(ctx goka.Context, tr codecs.ShardTrigger) error {
	if want := s.shardKeys[ctx.Partition()]; ctx.Key() != want {
		return &codecs.Error{Code: codecs.CodeInvalidID, Reason: fmt.Sprintf("bulk key %q is not partition %d's shard key %q", ctx.Key(), ctx.Partition(), want)}
	}
	shard := s.decodeShardBulk(ctx.Key(), valueBytes(ctx))
	q := shard.Bulk.Queue
	if len(q) == 0 || q[0].TriggerID != tr.TriggerID || tr.Offset <= q[0].Offset {
		return nil
	}
	head := q[0]
	head.Skipped, head.Offset = head.Skipped+1, tr.Offset
	shard.Bulk.Queue = append([]codecs.ShardTrigger{head}, q[1:]...)
	s.setValue(ctx, codecs.EncodeShardRecord(shard))
	return nil
}

// bulkSkip reports whether cmd, rejected with err, is a command of the
// bulk operation in progress that lost to a newer version of its job (its
// BulkHeader carries the operation's MAC for this job and version), and
// if so sends the operation its skip: a put between the walk and the
// command wins, and the loss is counted, not rejected. A command handled
// again after a crash (the job is one version past its if_version, in the
// state the command leaves it) is its own effect, not a loss: it is
// dropped uncounted (repeat). It reads the bulk state only for such a command (an
// error: the store's). old and tomb are the job's live record and
// tombstone (liveRecord).
func (s *Scheduler) bulkSkip(ctx goka.Context, cmd codecs.Command, err error, old, tomb *codecs.JobRecord) (skipped, repeat bool, _ error) {
	var ce *codecs.Error
	if !errors.As(err, &ce) || ce.Code != codecs.CodeVersionConflict || cmd.IfVersion == nil {
		return false, false, nil
	}
	mac, id, ok := strings.Cut(string(ctx.Headers()[codecs.BulkHeader]), " ")
	if !ok {
		return false, false, nil
	}
	p := ctx.Partition()
	st := s.Store(p)
	if st == nil {
		return false, false, fmt.Errorf("scheduler: no open store for partition %d", p)
	}
	b, err := st.Get(s.shardKeys[p])
	if err != nil {
		return false, false, err
	}
	q := s.decodeShardBulk(s.shardKeys[p], b).Bulk.Queue
	if len(q) == 0 || q[0].TriggerID != id || q[0].Nonce == "" ||
		!hmac.Equal([]byte(mac), []byte(codecs.BulkMAC(q[0].Nonce, id, ctx.Key(), *cmd.IfVersion))) {
		return false, false, nil
	}
	if bulkRepeat(cmd, old, tomb) {
		return true, true, nil
	}
	ctx.Loopback(s.shardKeys[p], codecs.EncodeInternal(codecs.ShardTrigger{
		Kind: codecs.KindBulkSkip, T: q[0].T, TriggerID: id, Offset: ctx.Offset() + 1}))
	return true, false, nil
}

// bulkRepeat reports whether the job (live record old, or tombstone tomb)
// is as bulk command cmd leaves it, one version past its if_version: the
// command was applied and is handled again (a crash before its commit).
func bulkRepeat(cmd codecs.Command, old, tomb *codecs.JobRecord) bool {
	want := *cmd.IfVersion + 1
	switch {
	case cmd.Op == codecs.BulkDelete:
		return tomb != nil && tomb.Version == want
	case old == nil || old.Version != want:
		return false
	case cmd.Op == codecs.BulkPause:
		return old.Status == codecs.StatusPaused
	case cmd.Op == codecs.BulkResume:
		// Resumed, it may have fired its last time since (completing
		// keeps the version): adversary 16 counted such a repeat skipped.
		return old.Status == codecs.StatusActive || old.Status == codecs.StatusCompleted
	}
	return false
}

// errBulkSkipped is the outcome of a bulk command that lost to a newer
// version of its job: committed, nothing changed, no reject.
var errBulkSkipped = fmt.Errorf("%w: a bulk operation's command lost to a newer version of its job", errStale)

// checkBarrier accepts tr as the barrier of head, the operation in
// progress, only once its walk is done and with its nonce: anyone who may
// write chronos-jobs can write a record under a shard key, and a forged
// barrier would end the operation early with counts of its choosing
// (adversary 14). A head without a nonce was walked by a release before
// nonces, whose barrier has none either.
func checkBarrier(head, tr codecs.ShardTrigger) error {
	if head.Walked && subtle.ConstantTimeCompare([]byte(head.Nonce), []byte(tr.Nonce)) == 1 {
		return nil
	}
	return &codecs.Error{Code: codecs.CodeReservedID, Field: "id", Reason: fmt.Sprintf(
		"the key is a shard key: only the scheduler writes a bulk barrier here, and this one does not carry bulk operation %q's secret (or its walk is not done)", tr.TriggerID)}
}

// bulkKeys returns up to limit keys of tr's bucket or prefix after its
// cursor, and whether more may follow.
func bulkKeys(st *store.Store, tr codecs.ShardTrigger, limit int) ([]string, bool, error) {
	var keys []string
	var err error
	if tr.Bucket == "" {
		keys, err = st.PrefixKeys(tr.Prefix, tr.AfterKey, limit+1)
	} else {
		keys, err = st.BucketKeys(tr.Bucket, tr.AfterKey, limit+1)
	}
	if err != nil {
		return nil, false, err
	}
	if len(keys) > limit {
		return keys[:limit], true, nil
	}
	return keys, false, nil
}

// checkBulkTrigger checks what a bulk shard trigger needs to finish: a
// bulk op, a valid bucket or prefix (one of them), a trigger id, a note
// only on a pause. A bad one is rejected, never retried. A prefix under
// the reserved "__chronos/" passes here: every entrance refuses it now,
// but an operation an earlier release queued with one must still finish
// (its continuations rejected, it would block the shard's queue for
// good); its walk selects no job, since no job id has that prefix.
func checkBulkTrigger(tr codecs.ShardTrigger) error {
	if strings.HasPrefix(tr.Prefix, topology.ShardKeyPrefix) {
		tr.Prefix = "x" + strings.TrimPrefix(tr.Prefix, topology.ShardKeyPrefix) // checked as an ordinary prefix otherwise
	}
	bt := codecs.BucketTrigger{Op: tr.Op, Bucket: tr.Bucket, Prefix: tr.Prefix, Note: tr.Note, TriggerID: tr.TriggerID}
	if !codecs.IsBulkOp(tr.Op) {
		return &codecs.Error{Code: codecs.CodeUnknownOp, Field: "op", Reason: fmt.Sprintf("a bulk shard trigger needs op pause, resume or delete, not %q", tr.Op)}
	}
	if tr.TriggerID == "" {
		return &codecs.Error{Code: codecs.CodeInvalidField, Field: "trigger_id", Reason: "a bulk shard trigger needs a trigger id"}
	}
	return codecs.CheckBucketTrigger(bt)
}
