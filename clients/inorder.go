package clients

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
)

// ErrEarlierWriteFailed is the error of a record reported failed because
// a record sent before it by the same producer failed (see InOrder).
var ErrEarlierWriteFailed = errors.New("clients: a record sent earlier by this producer failed")

// InOrder wraps a goka producer so that its records are reported in the
// order they were sent, and every record after one that failed is
// reported failed, until the producer is rebuilt.
//
// goka v1.1.16 commits an input once its callback's emits and table
// writes are acknowledged, by marking the input's offset in the consumer
// group session, and a marked offset covers every input before it. A
// record that failed (its retries spent while a leader moved) stops the
// partition, but only asynchronously: an input consumed after it whose
// records succeeded (sarama bumps the idempotent epoch and goes on; without
// idempotence a later request can land first) is committed in the
// meantime, and with it the failed input's offset. Its command, fold or
// fire would be skipped by every later owner, and the store that held its
// write is discarded as unsettled, so nothing would keep it. With InOrder
// a callback's records are acknowledged only after every record sent
// before them (of any partition of the processor: one producer serves
// them all), and after a failure every later one fails too: no input is
// committed past one whose write failed. The failed inputs are consumed
// again after the restart that the failure causes (the instance restarts
// a processor that stopped with an error, and that builds a new producer).
//
// The cost is head-of-line: a record's acknowledgement waits for the
// slowest record sent before it. On one broker (the embedded one, and
// sarama's idempotent producer with one request in flight per broker)
// records are acknowledged about in that order anyway.
func InOrder(p goka.Producer) goka.Producer { return &inOrder{Producer: p} }

// inOrder is InOrder's producer.
type inOrder struct {
	goka.Producer

	mu         sync.Mutex
	head       uint64         // the number of sent[0]
	sent       []*orderedSend // records not yet reported, in send order
	failed     error          // the first record's failure; sticky
	ready      []*orderedSend // decided, to report in this order
	delivering bool           // a goroutine is reporting ready
	held       int            // barriers in sent: inputs whose commit waits
	heldBytes  int            // the input bytes those barriers pin (holdBytes)
	room       chan struct{}  // closed (and replaced) when a barrier leaves sent
}

// MaxHeldCommits is how many inputs a group's callbacks may have begun
// whose commit still waits for an earlier record (CommitOrder): the next
// callback waits for room (one more per partition whose context is
// cancelled while it waits). Each held input pins its record (key and
// value) in goka's context; an input that sends no record is held only
// here (adversary round 51: 3,000 inputs of 8 KiB behind one slow record,
// 24 MB, and no bound but the input rate times the wait).
const MaxHeldCommits = 1024

// MaxHeldBytes is how many bytes of input records (InputBytes) a
// group's held commits may pin together: a callback whose input would pass
// it waits for room before it runs (Input), unless nothing else is held
// or its own commit is no longer held. Without it, 1,024 records as large
// as an inbound topic's max.message.bytes (1 MiB by default; over
// --max-payload they are rejected, and wait like the others) would pin
// 1 GiB per group while one write is slow. Ordinary commands (~1 KiB)
// never reach it; 512 commands with the largest default payload (64 KiB)
// do.
const MaxHeldBytes = 32 << 20

// orderedSend is one record between its send and its report.
type orderedSend struct {
	finish  goka.PromiseFinisher
	done    bool // the inner producer finished it
	barrier bool // a callback's commit, not a record
	out     bool // left sent: reported, or about to be
	bytes   int  // a barrier's input bytes, counted in heldBytes
	msg     *sarama.ProducerMessage
	err     error
}

func (p *inOrder) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *inOrder) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	s := &orderedSend{finish: finish}
	p.mu.Lock()
	n := p.head + uint64(len(p.sent))
	p.sent = append(p.sent, s)
	failed := p.failed
	p.mu.Unlock()
	if failed != nil {
		// Not sent: the partition it belongs to is stopping, and its
		// input is consumed again after the restart. Reported in its
		// place, after the records sent before it.
		p.finished(n, nil, fmt.Errorf("%w (%v); %s/%q not sent", ErrEarlierWriteFailed, failed, topic, key))
		return promise
	}
	p.Producer.EmitWithHeaders(topic, key, value, headers).ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
		p.finished(n, msg, err)
	})
	return promise
}

// barrier returns a promise reported after every record sent before it,
// failed if one of them failed: what a callback's commit waits for
// (CommitOrder).
func (p *inOrder) barrier() (*goka.Promise, *orderedSend) {
	promise, finish := goka.NewPromiseWithFinisher()
	s := &orderedSend{finish: finish, barrier: true}
	p.mu.Lock()
	n := p.head + uint64(len(p.sent))
	p.sent = append(p.sent, s)
	p.held++
	p.mu.Unlock()
	p.finished(n, nil, nil)
	return promise, s
}

// roomLocked returns the channel closed when a barrier next leaves sent.
// The caller holds p.mu.
func (p *inOrder) roomLocked() chan struct{} {
	if p.room == nil {
		p.room = make(chan struct{})
	}
	return p.room
}

// waitRoom returns once fewer than MaxHeldCommits barriers wait, or ctx's
// error first.
func (p *inOrder) waitRoom(ctx context.Context) error {
	p.mu.Lock()
	for p.held >= MaxHeldCommits {
		room := p.roomLocked()
		p.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return fmt.Errorf("clients: waiting for the commits of %d earlier inputs: %w", MaxHeldCommits, ctx.Err())
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	return nil
}

// holdBytes counts n input bytes against MaxHeldBytes for as long as
// barrier b holds its input's commit, once the other held inputs leave
// room for them (or none is held, or b no longer holds, or ctx is done: a
// cancelled partition's input is held anyway, as in waitRoom).
func (p *inOrder) holdBytes(ctx context.Context, b *orderedSend, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !b.out && p.heldBytes > 0 && p.heldBytes+n > MaxHeldBytes {
		room := p.roomLocked()
		p.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			p.mu.Lock()
			if !b.out {
				b.bytes, p.heldBytes = n, p.heldBytes+n
			}
			return
		}
		p.mu.Lock()
	}
	if !b.out {
		b.bytes, p.heldBytes = n, p.heldBytes+n
	}
}

// finished records the inner producer's result for record n and reports
// every record now decided, in order.
func (p *inOrder) finished(n uint64, msg *sarama.ProducerMessage, err error) {
	p.mu.Lock()
	i := n - p.head
	if n < p.head || i >= uint64(len(p.sent)) || p.sent[i].done {
		p.mu.Unlock()
		return // finished twice
	}
	s := p.sent[i]
	if i > 0 && msg != nil {
		// It waits behind an earlier record: keep what goka reads of it
		// (the offset a table write records), not its key and value.
		msg = &sarama.ProducerMessage{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset, Timestamp: msg.Timestamp}
	}
	s.done, s.msg, s.err = true, msg, err
	k := 0
	for k < len(p.sent) && p.sent[k].done {
		d := p.sent[k]
		if d.err != nil && p.failed == nil {
			p.failed = d.err
		} else if d.err == nil && p.failed != nil {
			d.err = fmt.Errorf("%w (%v); this one is reported failed so that its input is not committed past that one's", ErrEarlierWriteFailed, p.failed)
		}
		if d.barrier {
			p.held--
			p.heldBytes -= d.bytes
		}
		d.out = true
		p.ready = append(p.ready, d)
		p.sent[k] = nil
		k++
	}
	if p.room != nil && k > 0 {
		close(p.room) // the waiters check again
		p.room = nil
	}
	if k > 0 {
		p.head += uint64(k)
		p.sent = p.sent[k:]
		if len(p.sent) == 0 {
			p.sent = p.sent[:0:0] // let the backing array go
		}
	}
	if p.delivering {
		p.mu.Unlock()
		return // the goroutine delivering reports them, in order
	}
	p.delivering = true
	for len(p.ready) > 0 {
		batch := p.ready
		p.ready = nil
		p.mu.Unlock()
		// Reported without the lock: a promise's callback may send
		// (and its send may finish at once, appending to ready).
		for _, d := range batch {
			d.finish(d.msg, d.err)
		}
		p.mu.Lock()
	}
	p.delivering = false
	p.mu.Unlock()
}

// CommitOrder makes a goka processor commit an input only once every
// record its producer sent before the input's callback began has been
// acknowledged: with InOrder alone, an input whose callback sends nothing
// through the producer (a rejected command, whose reject another client
// writes; a history fold that changes nothing; a stale loopback) was
// committed as soon as its callback ended, past an earlier input whose
// write was still being retried and then failed (adversary round 50: a
// put lost behind a rejected tombstone, a fire missing from a job's
// history). One per processor group: its Builder wraps every producer the
// group's runs build, and Guard (through GuardCallbacks) holds each
// callback's commit behind the latest one's records.
//
// It covers the records of the processor's producer. A deferred commit
// that another client completes later with an error (none does today:
// inputs.Policy.Reject completes with nil) is not ordered by it.
type CommitOrder struct {
	cur atomic.Pointer[inOrder]
}

// Builder wraps pb's producers in InOrder and keeps the latest, whose
// order the callbacks' commits follow.
func (o *CommitOrder) Builder(pb goka.ProducerBuilder) goka.ProducerBuilder {
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		p, err := pb(brokers, clientID, hasher)
		if err != nil {
			return nil, err
		}
		io := &inOrder{Producer: p}
		o.cur.Store(io)
		return io, nil
	}
}

// hold withholds ctx's commit until every record sent before now has
// been reported: failed (the input uncommitted, the partition stopping)
// if one of them failed.
func (o *CommitOrder) hold(ctx goka.Context) heldInput {
	p := o.cur.Load()
	if p == nil {
		return heldInput{} // no producer built yet: nothing was sent before
	}
	done := ctx.DeferCommit()
	// A cancelled context (a revocation, a stop) ends the wait for room,
	// and the commit is held like the others, one past the bound: failing
	// it would stop the whole group (goka ends a session on a partition's
	// error) at every rebalance that met a full queue (adversary round 52).
	// No more inputs come to a cancelled partition.
	_ = p.waitRoom(ctx.Context())
	promise, b := p.barrier()
	promise.Then(done)
	return heldInput{p, b}
}

// heldInput is a callback's held commit: its barrier in p.
type heldInput struct {
	p *inOrder
	b *orderedSend
}

// Input is goka.Input for a topic of raw records whose callback's input
// counts against MaxHeldBytes while its commit is held (CommitOrder):
// every Chronos processor's inputs are defined with it or with Loop.
// goka's context wrapper, which holds the commit, does not see the
// record; this callback does, before cb runs.
func Input(topic goka.Stream, cb goka.ProcessCallback) goka.Edge {
	return goka.Input(topic, new(codec.Bytes), holdingBytes(cb))
}

// Loop is goka.Loop with Input's byte bound.
func Loop(cb goka.ProcessCallback) goka.Edge {
	return goka.Loop(new(codec.Bytes), holdingBytes(cb))
}

func holdingBytes(cb goka.ProcessCallback) goka.ProcessCallback {
	return func(ctx goka.Context, msg any) {
		if c, ok := ctx.(strictWrites); ok && c.held.p != nil {
			v, _ := msg.([]byte)
			c.held.p.holdBytes(ctx.Context(), c.held.b, InputBytes(ctx, v))
		}
		cb(ctx, msg)
	}
}

// InputBytes is what ctx's input record pins while it is held: its key,
// value (the callback's msg) and headers. Headers of one key are counted
// once (goka keeps the last); the patched decoder keeps at most
// sarama.MaxRecordHeaderBytes of them (adversary round 53: 160 records of
// one 640 KiB header, counted 7 bytes each, pinned 100 MiB).
func InputBytes(ctx goka.Context, value []byte) int {
	n := len(ctx.Key()) + len(value)
	for k, v := range ctx.Headers() {
		n += len(k) + len(v)
	}
	return n
}

// GuardCallbacks returns the goka option every Chronos processor runs
// with (goka keeps one context wrapper): StrictTableWrites with failed,
// and, with order, each callback's commit held behind the records sent
// before it (CommitOrder; order's Builder must build the processor's
// producer).
func GuardCallbacks(failed *atomic.Uint64, order *CommitOrder) goka.ProcessorOption {
	return goka.WithContextWrapper(func(ctx goka.Context) goka.Context {
		var held heldInput
		if order != nil {
			held = order.hold(ctx)
		}
		return strictWrites{ctx, failed, held}
	})
}
