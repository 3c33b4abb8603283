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

// TestWriteAcksWaitsForEveryEarlierRecordOfItsTopic: Wait returns once
// every record of its topic sent before it is acknowledged, whatever its
// key (a fire is built from records earlier callbacks wrote), and not for
// records of other topics or sent after it; a failure among them is
// reported once.
func TestWriteAcksWaitsForEveryEarlierRecordOfItsTopic(t *testing.T) {
	held := &heldProducer{held: map[string][]goka.PromiseFinisher{}}
	w := &WriteAcks{}
	p, err := w.Builder(func([]string, string, func() hash.Hash32) (goka.Producer, error) { return held, nil })(nil, "c", nil)
	require.NoError(t, err)
	ctx := context.Background()
	pending := func(done <-chan error, why string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("Wait returned (%v) %s", err, why)
		case <-time.After(50 * time.Millisecond):
		}
	}

	require.ErrorIs(t, w.Wait(ctx, "table", "k"), errNotWired, "a wait before any record went through its producer")
	p.Emit("loop", "x", nil)
	held.ack("loop", "x", nil)
	require.NoError(t, w.Wait(ctx, "table", "k"), "nothing sent to the topic: nothing to wait for")
	p.Emit("table", "k", []byte("1"))
	p.EmitWithHeaders("table", "k", []byte("2"), nil)
	p.Emit("table", "other", []byte("x"))
	p.Emit("loop", "k", []byte("y"))

	done := waitDone(w, ctx, "table", "k")
	held.ack("table", "k", nil)
	pending(done, "with a record of its key unacknowledged")
	held.ack("table", "k", nil)
	pending(done, "with an earlier record of another key of its topic unacknowledged")
	p.Emit("table", "later", []byte("z")) // sent after the wait began
	held.ack("table", "other", nil)
	require.NoError(t, <-done, "every earlier record acknowledged; a later one and another topic's still pending")
	held.ack("table", "later", nil)

	// A failed write, of any key, is reported to the waiter, once.
	p.Emit("table", "other", []byte("3"))
	p.Emit("table", "k", []byte("4"))
	done = waitDone(w, ctx, "table", "k")
	held.ack("table", "other", errors.New("broker gone"))
	held.ack("table", "k", nil)
	require.ErrorContains(t, <-done, "broker gone")
	require.NoError(t, w.Wait(ctx, "table", "k"), "a later wait does not see the old failure again")

	// A failure after the wait began is the next wait's.
	p.Emit("table", "k", []byte("5"))
	done = waitDone(w, ctx, "table", "k")
	held.ack("table", "k", nil)
	require.NoError(t, <-done)

	// A cancelled context ends the wait.
	p.Emit("table", "k", []byte("6"))
	cctx, cancel := context.WithCancel(ctx)
	done = waitDone(w, cctx, "table", "k")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// TestTopicWritesCountsFailuresAndFlushes: a store's close asks whether a
// record failed while it was open (Failures, every failure, also one a
// Wait reported; of one topic, or of all with All) and waits for the
// records sent before it (Flushed), not for later ones.
func TestTopicWritesCountsFailuresAndFlushes(t *testing.T) {
	held := &heldProducer{held: map[string][]goka.PromiseFinisher{}}
	w := &WriteAcks{}
	p, err := w.Builder(func([]string, string, func() hash.Hash32) (goka.Producer, error) { return held, nil })(nil, "c", nil)
	require.NoError(t, err)
	ctx := context.Background()
	tw := w.Topic("table")
	require.Zero(t, tw.Failures())
	require.NoError(t, tw.Flushed(ctx), "nothing sent")

	p.Emit("table", "a", nil)
	p.Emit("table", "b", nil)
	flushed := make(chan error, 1)
	go func() { flushed <- tw.Flushed(ctx) }()
	held.ack("table", "a", nil)
	select {
	case err := <-flushed:
		t.Fatalf("Flushed returned (%v) with b in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Emit("table", "later", nil)
	held.ack("table", "b", errors.New("broker gone"))
	require.NoError(t, <-flushed, "a and b finished; a later record does not hold it")
	require.Equal(t, uint64(1), tw.Failures())
	require.ErrorContains(t, w.Wait(ctx, "table", "a"), "broker gone") // reported once to a Wait...
	require.Equal(t, uint64(1), tw.Failures(), "...and still counted")
	require.Zero(t, w.Topic("other").Failures())

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, tw.Flushed(cctx), context.Canceled, "later is still in flight")
	held.ack("table", "later", nil)
	require.NoError(t, tw.Flushed(ctx))

	// All: every topic's records, the table's and the loop's.
	all := w.All()
	require.Equal(t, uint64(1), all.Failures())
	p.Emit("loop", "x", nil)
	require.NoError(t, tw.Flushed(ctx), "the table's records are done")
	cctx, cancel = context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, all.Flushed(cctx), context.Canceled, "the loop's record is in flight")
	held.ack("loop", "x", errors.New("loop gone"))
	require.NoError(t, all.Flushed(ctx))
	require.Equal(t, uint64(2), all.Failures())
	require.Equal(t, uint64(1), tw.Failures())
}

// BenchmarkWriteAcksSent: a record counted and acknowledged with nobody
// waiting, as nearly every record of a registration is.
// go test -run '^$' -bench WriteAcksSent -benchmem ./clients/
func BenchmarkWriteAcksSent(b *testing.B) {
	var w WriteAcks
	b.ReportAllocs()
	for b.Loop() {
		w.sent("t")(nil)
	}
}
