package clients

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"

	"github.com/lovoo/goka"
)

// WriteAcks tracks the records a goka processor's producer has sent and
// the broker has not acknowledged yet, per topic and key, so that a
// callback can wait until its table writes have reached the changelog:
// goka's SetValue writes the local store at once and the changelog
// asynchronously, and only the input's commit waits for it. The scheduler
// waits so before each pass callback's first fire (docs/reliability.md,
// "A callback's fires and its lost table write"). Safe for concurrent
// use; the zero value is ready.
type WriteAcks struct {
	mu      sync.Mutex
	pending map[string]*pendingWrites
	records atomic.Uint64 // records counted since it was made
}

// errNotWired: Wait before any record went through a producer of Builder.
var errNotWired = errors.New("clients: no record has gone through this WriteAcks' producers (is its Builder the processor's producer builder?)")

type pendingWrites struct {
	n    int
	err  error
	done chan struct{} // closed when n reaches 0
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

// ProducerBuilder returns goka's producer builder with this configuration
// (the one GokaProcessorOptions uses), to wrap (WriteAcks.Builder).
func (c Config) ProducerBuilder() goka.ProducerBuilder { return c.producerBuilder() }

// Wait returns once every record of key sent to topic so far has been
// acknowledged; an error if no record at all has gone through its
// producers (it is not wired); or the error of one that failed since the
// last time none was pending (reported once, to the first Wait after it,
// however late); or ctx's error.
func (w *WriteAcks) Wait(ctx context.Context, topic, key string) error {
	k := topic + "\x00" + key
	if w.records.Load() == 0 {
		// The caller wrote before it waits: nothing counted means the
		// processor's producer is not this one's, and waiting would
		// promise what it cannot.
		return errNotWired
	}
	w.mu.Lock()
	p := w.pending[k]
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		if p.err != nil {
			w.mu.Lock()
			if w.pending[k] == p {
				delete(w.pending, k)
			}
			w.mu.Unlock()
			return fmt.Errorf("clients: writing %s to %s: %w", key, topic, p.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("clients: waiting for %s's write to %s: %w", key, topic, ctx.Err())
	}
}

func (w *WriteAcks) sent(topic, key string) func(error) {
	k := topic + "\x00" + key
	w.mu.Lock()
	if w.pending == nil {
		w.pending = map[string]*pendingWrites{}
	}
	p := w.pending[k]
	if p == nil || p.n == 0 {
		// None in flight (a failure not reported yet is superseded: this
		// record replaces the one that failed).
		p = &pendingWrites{done: make(chan struct{})}
		w.pending[k] = p
	}
	p.n++
	w.mu.Unlock()
	w.records.Add(1)
	return func(err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			p.err = err
		}
		if p.n--; p.n == 0 {
			if p.err == nil {
				delete(w.pending, k)
			} // else kept for the next Wait (or the next record of key)
			close(p.done)
		}
	}
}

// ackedProducer is a goka producer whose records WriteAcks counts.
type ackedProducer struct {
	goka.Producer
	acks *WriteAcks
}

func (p ackedProducer) Emit(topic, key string, value []byte) *goka.Promise {
	done := p.acks.sent(topic, key)
	return p.Producer.Emit(topic, key, value).Then(done)
}

func (p ackedProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	done := p.acks.sent(topic, key)
	return p.Producer.EmitWithHeaders(topic, key, value, headers).Then(done)
}
