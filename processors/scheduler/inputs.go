package scheduler

import (
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
	if raw == nil {
		return codecs.Command{}, &codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value (tombstone) is not a command; " +
			`to delete a job write {"v":1,"op":"delete"} with its id as the key`}
	}
	cmd, err := codecs.DecodeCommand([]byte(ctx.Key()), raw, s.cfg.Limits)
	if err != nil {
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

// reject writes the input to chronos-rejects with the reason, under the
// input policy (it never stops the partition).
func (s *Scheduler) reject(ctx goka.Context, raw []byte, err error) {
	s.cfg.Metrics.rejected(s.cfg.Inputs.Reject(ctx, raw, err))
}
