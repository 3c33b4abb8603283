package clients

import (
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
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
}

// orderedSend is one record between its send and its report.
type orderedSend struct {
	finish goka.PromiseFinisher
	done   bool // the inner producer finished it
	msg    *sarama.ProducerMessage
	err    error
}

func (p *inOrder) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *inOrder) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	s := &orderedSend{finish: finish}
	p.mu.Lock()
	if p.failed != nil {
		// Not sent: the partition it belongs to is stopping, and its
		// input is consumed again after the restart.
		err := p.failed
		p.mu.Unlock()
		finish(nil, fmt.Errorf("%w (%v); %s/%q not sent", ErrEarlierWriteFailed, err, topic, key))
		return promise
	}
	n := p.head + uint64(len(p.sent))
	p.sent = append(p.sent, s)
	p.mu.Unlock()
	p.Producer.EmitWithHeaders(topic, key, value, headers).ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
		p.finished(n, msg, err)
	})
	return promise
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
	s.done, s.msg, s.err = true, msg, err
	k := 0
	for k < len(p.sent) && p.sent[k].done {
		d := p.sent[k]
		if d.err != nil && p.failed == nil {
			p.failed = d.err
		} else if d.err == nil && p.failed != nil {
			d.err = fmt.Errorf("%w (%v); this one was acknowledged but is reported failed so that its input is not committed past that one", ErrEarlierWriteFailed, p.failed)
		}
		p.ready = append(p.ready, d)
		p.sent[k] = nil
		k++
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
