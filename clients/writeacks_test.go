package clients

import (
	"context"
	"errors"
	"hash"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
)

// heldProducer is a goka producer whose records the test acknowledges.
type heldProducer struct {
	mu   sync.Mutex
	held map[string][]goka.PromiseFinisher // by topic/key
}

func (p *heldProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *heldProducer) EmitWithHeaders(topic, key string, _ []byte, _ goka.Headers) *goka.Promise {
	pr, fin := goka.NewPromiseWithFinisher()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[topic+"/"+key] = append(p.held[topic+"/"+key], fin)
	return pr
}

func (p *heldProducer) Close() error { return nil }

// ack finishes the oldest record held for topic/key with err.
func (p *heldProducer) ack(topic, key string, err error) {
	p.mu.Lock()
	fin := p.held[topic+"/"+key][0]
	p.held[topic+"/"+key] = p.held[topic+"/"+key][1:]
	p.mu.Unlock()
	fin(&sarama.ProducerMessage{Topic: topic}, err)
}

// waitDone starts Wait and returns its result's channel.
func waitDone(w *WriteAcks, ctx context.Context, topic, key string) <-chan error {
	c := make(chan error, 1)
	go func() { c <- w.Wait(ctx, topic, key) }()
	return c
}

func TestWriteAcksWaitsForEveryRecordOfItsKey(t *testing.T) {
	held := &heldProducer{held: map[string][]goka.PromiseFinisher{}}
	w := &WriteAcks{}
	p, err := w.Builder(func([]string, string, func() hash.Hash32) (goka.Producer, error) { return held, nil })(nil, "c", nil)
	require.NoError(t, err)
	ctx := context.Background()

	require.ErrorIs(t, w.Wait(ctx, "table", "k"), errNotWired, "a wait before any record went through its producer")
	p.Emit("loop", "x", nil)
	held.ack("loop", "x", nil)
	require.NoError(t, w.Wait(ctx, "table", "k"), "nothing of its key sent: nothing to wait for")
	p.Emit("table", "k", []byte("1"))
	p.EmitWithHeaders("table", "k", []byte("2"), nil)
	p.Emit("table", "other", []byte("x"))
	p.Emit("loop", "k", []byte("y"))

	done := waitDone(w, ctx, "table", "k")
	held.ack("table", "k", nil)
	select {
	case err := <-done:
		t.Fatalf("Wait returned (%v) with a record of its key unacknowledged", err)
	case <-time.After(50 * time.Millisecond):
	}
	held.ack("table", "k", nil)
	require.NoError(t, <-done, "both acknowledged; the other key and topic still pending")

	// A failed write is reported to the waiter.
	p.Emit("table", "k", []byte("3"))
	p.Emit("table", "k", []byte("4"))
	done = waitDone(w, ctx, "table", "k")
	held.ack("table", "k", errors.New("broker gone"))
	held.ack("table", "k", nil)
	require.ErrorContains(t, <-done, "broker gone")
	require.NoError(t, w.Wait(ctx, "table", "k"), "a later wait, with nothing pending, does not see the old failure")

	// A cancelled context ends the wait.
	p.Emit("table", "k", []byte("5"))
	cctx, cancel := context.WithCancel(ctx)
	done = waitDone(w, cctx, "table", "k")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}
