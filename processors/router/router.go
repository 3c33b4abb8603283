// Package router is the router group: it consumes chronos-bucket-triggers
// and sends "fire bucket B" to every partition of chronos-shard-triggers, so
// each shard fires the active jobs of B from its bucket index. A bulk
// operation (pause, resume or delete the jobs of a bucket or of an id
// prefix) takes the same way.
package router

import (
	"log/slog"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/topology"
)

// Config configures the router group.
type Config struct {
	Layout topology.Layout
	// Limits on trigger payloads (default codecs.DefaultLimits()).
	Limits codecs.Limits
	Logger *slog.Logger
	// Inputs is the policy for triggers that cannot be applied (default:
	// rejects emitted through goka, see inputs.Policy).
	Inputs *inputs.Policy
}

// Router is the router group. Its callbacks are stateless; safe for
// concurrent use.
type Router struct {
	cfg       Config
	shardKeys []string
}

// New returns the router for cfg.
func New(cfg Config) (*Router, error) {
	if cfg.Limits == (codecs.Limits{}) {
		cfg.Limits = codecs.DefaultLimits()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Inputs == nil {
		cfg.Inputs = &inputs.Policy{Rejects: cfg.Layout.Rejects(), Logger: cfg.Logger}
	}
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	keys, err := topology.ShardKeys(cfg.Layout.Partitions)
	if err != nil {
		return nil, err
	}
	return &Router{cfg: cfg, shardKeys: keys}, nil
}

// Graph returns the router group graph.
func (r *Router) Graph() *goka.GroupGraph {
	n := r.cfg.Layout.Names
	return goka.DefineGroup(n.RouterGroup(),
		clients.Input(n.BucketTriggers(), r.onTrigger),
		goka.Output(n.ShardTriggers(), new(codec.Bytes)),
		goka.Output(n.Rejects(), new(codec.Bytes)),
	)
}

func (r *Router) onTrigger(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	if err := codecs.CheckHeaders(ctx.Headers()); err != nil {
		r.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	if raw == nil {
		r.cfg.Inputs.Reject(ctx, nil, &codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value (tombstone) is not a bucket trigger"})
		return
	}
	bt, err := codecs.DecodeBucketTrigger(raw, ctx.Partition(), ctx.Offset(), r.cfg.Limits)
	if err != nil {
		r.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	// The record time becomes the shard trigger's T and every event's
	// scheduled_at: without one (-1) the shards would refuse the trigger
	// as theirs, once per partition; after 9999 it cannot be encoded.
	if err := codecs.CheckRecordTime(ctx.Timestamp()); err != nil {
		r.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: ctx.Timestamp().UTC(),
		Bucket: bt.Bucket, TriggerID: bt.TriggerID, Payload: bt.Payload}
	if codecs.IsBulkOp(bt.Op) {
		// A bulk operation: each shard writes the op as a command for each
		// of its jobs it changes, with the sender as the commands' actor.
		tr.Kind, tr.Op, tr.Prefix, tr.Note = codecs.KindBulk, bt.Op, bt.Prefix, bt.Note
		tr.Actor = codecs.Truncate(string(ctx.Headers()[codecs.ActorHeader]), codecs.HistoryActorBytes)
	}
	msgOut := codecs.EncodeInternal(tr)
	for _, k := range r.shardKeys {
		ctx.Emit(r.cfg.Layout.ShardTriggers(), k, msgOut)
	}
}
