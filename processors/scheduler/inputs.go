package scheduler

import (
	"encoding/json"
	"fmt"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// decodeCommand decodes the current chronos-jobs record of ctx under the
// input policy (docs/topics.md): a tombstone, an undecodable or invalid
// command, and a command whose key does not hash to the partition it
// arrived on are errors (the caller rejects them; nothing is stored). The
// one exception to the partition rule is a delete of a key this partition
// holds: jobs stored on a wrong partition by earlier releases can still be
// deleted where they are.
func (s *Scheduler) decodeCommand(ctx goka.Context, raw []byte) (codecs.Command, error) {
	if err := codecs.CheckHeaders(ctx.Headers()); err != nil {
		return codecs.Command{}, err
	}
	if raw == nil {
		return codecs.Command{}, &codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value (tombstone) is not a command; " +
			`to delete a job write {"v":1,"op":"delete"} with its id as the key`}
	}
	cmd, err := codecs.DecodeCommand([]byte(ctx.Key()), raw, s.cfg.Limits)
	if err != nil {
		return codecs.Command{}, err
	}
	// A command's record time is its time (a put's creation, a manual
	// fire's scheduled_at): without a usable one (-1, after 9999) a put
	// would owe every fire since year 1 and a fire's event could not be
	// written as RFC 3339.
	if err := codecs.CheckRecordTime(ctx.Timestamp()); err != nil {
		return codecs.Command{}, err
	}
	if want := topology.Partition(cmd.ID, s.cfg.Layout.Partitions); want != ctx.Partition() {
		if v, _ := ctx.Value().([]byte); cmd.Op == codecs.OpDelete && len(v) > 0 && !codecs.IsShardRecord(v) {
			return cmd, nil
		}
		return codecs.Command{}, &codecs.Error{Code: codecs.CodeWrongPartition, Field: "id", Reason: fmt.Sprintf(
			"job %q belongs on partition %d (FNV-1a partitioner, see docs/topics.md), it arrived on partition %d; nothing was stored",
			cmd.ID, want, ctx.Partition())}
	}
	return cmd, nil
}

// decodeTrigger decodes a shard trigger or loopback record under the input
// policy: besides the format, what the fan-out needs to finish must hold,
// or one record would fail its partition on every retry (for example a
// bucket payload too large to produce as a dispatch event). A time, a
// bucket trigger's bucket and trigger id, and a payload within the
// configured limit (valid JSON) are required.
func (s *Scheduler) decodeTrigger(raw []byte) (codecs.ShardTrigger, error) {
	tr, err := codecs.DecodeShardTrigger(raw)
	if err != nil {
		return tr, err
	}
	if tr.Kind != codecs.KindComplete && tr.T.IsZero() {
		return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodeMalformed, Field: "t", Reason: "a shard trigger needs a time"}
	}
	if tr.Kind == codecs.KindBucket {
		if err := codecs.ValidateBucket(tr.Bucket); err != nil || tr.Bucket == "" {
			return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "bucket", Reason: "a bucket shard trigger needs a valid bucket"}
		}
		if tr.TriggerID == "" {
			return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "trigger_id", Reason: "a bucket shard trigger needs a trigger id"}
		}
		if len(tr.TriggerID) > codecs.MaxIDLen {
			// The shard record names each fan-out by it (codecs.FanoutRef):
			// unbounded, a few such records would grow it past what Kafka
			// takes, and the partition would stop.
			return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "trigger_id",
				Reason: fmt.Sprintf("trigger id is %d bytes, the limit is %d", len(tr.TriggerID), codecs.MaxIDLen)}
		}
	}
	if tr.Kind == codecs.KindBulk {
		if err := checkBulkTrigger(tr); err != nil {
			return codecs.ShardTrigger{}, err
		}
	}
	if len(tr.Payload) > s.cfg.Limits.MaxPayload {
		return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodePayloadTooLarge, Field: "payload",
			Reason: fmt.Sprintf("payload is %d bytes, the limit is %d", len(tr.Payload), s.cfg.Limits.MaxPayload)}
	}
	if len(tr.Payload) > 0 && !json.Valid(tr.Payload) {
		return codecs.ShardTrigger{}, &codecs.Error{Code: codecs.CodeInvalidField, Field: "payload", Reason: "payload is not valid JSON"}
	}
	return tr, nil
}

// reject writes the input to chronos-rejects with the reason, under the
// input policy (it never stops the partition).
func (s *Scheduler) reject(ctx goka.Context, raw []byte, err error) {
	s.cfg.Metrics.rejected(s.cfg.Inputs.Reject(ctx, raw, err))
}
