package scheduler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KgoProducer produces dispatch events with a franz-go client: all records
// of a chunk are buffered at once and ProduceSync waits for every ack.
// Safe for concurrent use (one per instance, shared by all partitions).
type KgoProducer struct {
	Client *kgo.Client
}

// ProduceSync implements Producer.
func (p KgoProducer) ProduceSync(ctx context.Context, topic string, msgs []Msg) error {
	recs := make([]*kgo.Record, len(msgs))
	backing := make([]kgo.Record, len(msgs))
	for i, m := range msgs {
		backing[i] = kgo.Record{Topic: topic, Key: []byte(m.Key), Value: m.Value}
		recs[i] = &backing[i]
	}
	return p.Client.ProduceSync(ctx, recs...).FirstErr()
}
