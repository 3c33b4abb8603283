package clients

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
)

// WriteAcks tracks the records a goka processor's producer has sent and
// the broker has not acknowledged yet, per topic, so that a callback can
// wait until the table writes made before it have reached the changelog:
// goka's SetValue writes the local store at once and the changelog
// asynchronously, and only the input's commit waits for it. The scheduler
// waits so before a callback's first fire (docs/reliability.md, "A
// callback's fires and its lost table write"). It waits for every earlier
// record of the topic, not only those of the callback's own key: a fire
// is built from job records earlier callbacks wrote, and one of those
// lost (its changelog write failed while the partition went on) would
// leave a new owner with another record than the one the fire went out
// with (adversary round 32). Safe for concurrent use; the zero value is
// ready.
type WriteAcks struct {
	mu      sync.Mutex
	topics  map[string]*topicWrites
	records atomic.Uint64 // records counted since it was made
}

// errNotWired: Wait before any record went through a producer of Builder.
var errNotWired = errors.New("clients: no record has gone through this WriteAcks' producers (is its Builder the processor's producer builder?)")

// topicWrites is one topic's records in flight: each numbered as sent.
type topicWrites struct {
	next    uint64              // the number of the next record
	low     uint64              // every record before it is acknowledged
	pending map[uint64]struct{} // those not acknowledged yet
	err     error               // the first failure no Wait has reported
	errAt   uint64              // its record's number
	failed  uint64              // records that failed, ever
	changed chan struct{}       // closed at the next acknowledgement; nil: no waiter asked
}

// changedLocked returns the channel closed at the next acknowledgement,
// made when a waiter first asks (made for every record, one channel per
// acknowledgement was 1.2 GB of a 10M registration's 52 GB allocated in 5
// minutes). The caller holds the WriteAcks' mutex.
func (t *topicWrites) changedLocked() chan struct{} {
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// Builder wraps pb: every record its producers emit is counted until the
// broker acknowledges it or fails it.
func (w *WriteAcks) Builder(pb goka.ProducerBuilder) goka.ProducerBuilder {
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		p, err := pb(brokers, clientID, hasher)
		if err != nil {
			return nil, err
		}
		return ackedProducer{Producer: p, acks: w}, nil
	}
}

// ProducerBuilder returns goka's producer builder with this configuration,
// as it is, to wrap (CommitOrder.Builder first, then WriteAcks.Builder;
// GokaProcessorOptions' is wrapped in InOrder).
func (c Config) ProducerBuilder() goka.ProducerBuilder { return c.saramaProducerBuilder() }

// Wait returns once every record sent to topic before it was called has
// been acknowledged; an error if no record at all has gone through its
// producers (it is not wired); or the error of one of them that failed
// (reported once, to the first Wait that waits for it); or ctx's error.
// key names what the caller wrote, for the error.
func (w *WriteAcks) Wait(ctx context.Context, topic, key string) error {
	if w.records.Load() == 0 {
		// The caller wrote before it waits: nothing counted means the
		// processor's producer is not this one's, and waiting would
		// promise what it cannot.
		return errNotWired
	}
	w.mu.Lock()
	t := w.topics[topic]
	if t == nil {
		w.mu.Unlock()
		return nil
	}
	upTo := t.next
	for {
		if t.err != nil && t.errAt < upTo {
			err := t.err
			t.err = nil
			w.mu.Unlock()
			return fmt.Errorf("clients: writing to %s before %s's wait: %w", topic, key, err)
		}
		if t.low >= upTo {
			w.mu.Unlock()
			return nil
		}
		changed := t.changedLocked()
		w.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("clients: waiting for the writes to %s before %s's: %w", topic, key, ctx.Err())
		}
		w.mu.Lock()
	}
}

// Topic returns one topic's records as WriteAcks counts them: whether one
// failed, and when every one sent before has finished.
func (w *WriteAcks) Topic(topic string) TopicWrites { return TopicWrites{w: w, topic: topic} }

// All returns every topic's records as WriteAcks counts them: what a
// scheduler partition store asks at its close (store.Options.Settled).
func (w *WriteAcks) All() TopicWrites { return TopicWrites{w: w, all: true} }

// TopicWrites is one topic's records (or every topic's) as WriteAcks
// counts them.
type TopicWrites struct {
	w     *WriteAcks
	topic string
	all   bool
}

// of returns the topics counted, with w.mu held.
func (t TopicWrites) of() []*topicWrites {
	if !t.all {
		if tw := t.w.topics[t.topic]; tw != nil {
			return []*topicWrites{tw}
		}
		return nil
	}
	out := make([]*topicWrites, 0, len(t.w.topics))
	for _, tw := range t.w.topics {
		out = append(out, tw)
	}
	return out
}

// Failures returns how many records of the topic (or of all) have failed
// since the WriteAcks was made (errors Wait reported included).
func (t TopicWrites) Failures() uint64 {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	var n uint64
	for _, tw := range t.of() {
		n += tw.failed
	}
	return n
}

// Flushed returns once every record sent to the topic (or to any) before
// it was called has been acknowledged or has failed (Failures counts
// those), or ctx's error first.
func (t TopicWrites) Flushed(ctx context.Context) error {
	t.w.mu.Lock()
	tws := t.of()
	upTo := make([]uint64, len(tws))
	for i, tw := range tws {
		upTo[i] = tw.next
	}
	for i, tw := range tws {
		for tw.low < upTo[i] {
			changed := tw.changedLocked()
			t.w.mu.Unlock()
			select {
			case <-changed:
			case <-ctx.Done():
				return fmt.Errorf("clients: waiting for the records sent before: %w", ctx.Err())
			}
			t.w.mu.Lock()
		}
	}
	t.w.mu.Unlock()
	return nil
}

// Writes is what a partition store asks about its processor's records
// when it closes (TopicWrites, or a test's).
type Writes interface {
	// Failures returns how many records have failed so far.
	Failures() uint64
	// Flushed returns once every record sent before it was called has
	// finished (acknowledged or failed), or ctx's error.
	Flushed(ctx context.Context) error
}

// SettledSince returns a check for a partition store built now
// (store.Options.Settled): at the store's close it waits up to wait for
// every record w sent before to finish, and fails if one failed since the
// check was made (the store may then hold writes its changelog lacks).
// group names the writer, for the error.
func SettledSince(w Writes, wait time.Duration, group string) func() error {
	failed := w.Failures()
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := w.Flushed(ctx); err != nil {
			return err
		}
		if n := w.Failures() - failed; n > 0 {
			return fmt.Errorf("%d writes of %s failed while the store was open", n, group)
		}
		return nil
	}
}

func (w *WriteAcks) sent(topic string) func(error) {
	w.mu.Lock()
	if w.topics == nil {
		w.topics = map[string]*topicWrites{}
	}
	t := w.topics[topic]
	if t == nil {
		t = &topicWrites{pending: map[uint64]struct{}{}}
		w.topics[topic] = t
	}
	n := t.next
	t.next++
	t.pending[n] = struct{}{}
	w.mu.Unlock()
	w.records.Add(1)
	return func(err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := t.pending[n]; !ok {
			return // finished twice
		}
		delete(t.pending, n)
		if err != nil {
			t.failed++
			if t.err == nil {
				t.err, t.errAt = err, n
			}
		}
		for t.low < t.next {
			if _, ok := t.pending[t.low]; ok {
				break
			}
			t.low++
		}
		if t.changed != nil {
			close(t.changed) // the waiters check again
			t.changed = nil
		}
	}
}

// ackedProducer is a goka producer whose records WriteAcks counts.
type ackedProducer struct {
	goka.Producer
	acks *WriteAcks
}

func (p ackedProducer) Emit(topic, key string, value []byte) *goka.Promise {
	done := p.acks.sent(topic)
	return p.Producer.Emit(topic, key, value).Then(done)
}

func (p ackedProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	done := p.acks.sent(topic)
	return p.Producer.EmitWithHeaders(topic, key, value, headers).Then(done)
}
