package scheduler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KgoProducer produces records (dispatch events, bulk commands) with a franz-go client: all records
// of a chunk are buffered at once and ProduceSync waits for every ack.
// Safe for concurrent use (one per instance, shared by all partitions).
type KgoProducer struct {
	Client *kgo.Client
}

// ProduceSync implements Producer. It deliberately ignores ctx's
// cancellation: a fan-out whose partition is revoked mid-chunk still
// finishes producing (bounded by the client's record delivery timeout), so
// the chunk is either acknowledged or reported failed, never half-known.
func (p KgoProducer) ProduceSync(ctx context.Context, topic string, msgs []Msg) error {
	ctx = context.WithoutCancel(ctx)
	recs := make([]*kgo.Record, len(msgs))
	backing := make([]kgo.Record, len(msgs))
	for i, m := range msgs {
		backing[i] = kgo.Record{Topic: topic, Key: []byte(m.Key), Value: m.Value}
		for k, v := range m.Headers {
			backing[i].Headers = append(backing[i].Headers, kgo.RecordHeader{Key: k, Value: v})
		}
		recs[i] = &backing[i]
	}
	return p.Client.ProduceSync(ctx, recs...).FirstErr()
}
