package inputs

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// heldProducer answers no produce until released.
type heldProducer struct {
	release  chan struct{}
	produced atomic.Int64
}

func (p *heldProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	select {
	case <-p.release:
		p.produced.Add(1)
		return kgo.ProduceResults{{Record: rs[0]}}
	case <-ctx.Done():
		return kgo.ProduceResults{{Record: rs[0], Err: ctx.Err()}}
	}
}

type gokaContext = goka.Context

// rejectedInput is the goka context of one input to reject.
type rejectedInput struct {
	gokaContext // nil: only what Reject calls is implemented
	ctx         context.Context
	committed   *atomic.Int64
}

func (c rejectedInput) Context() context.Context { return c.ctx }
func (c rejectedInput) Key() string              { return "job" }
func (c rejectedInput) Topic() goka.Stream       { return "chronos-jobs" }
func (c rejectedInput) Partition() int32         { return 0 }
func (c rejectedInput) Offset() int64            { return 1 }
func (c rejectedInput) Timestamp() time.Time     { return time.Unix(1, 0) }
func (c rejectedInput) Headers() goka.Headers    { return goka.Headers{"h": make([]byte, 1000)} }
func (c rejectedInput) DeferCommit() func(error) {
	return func(error) { c.committed.Add(1) }
}

// TestRejectsInFlightAreBounded: while the rejects topic answers
// nothing, a Policy has at most MaxRejectBytesInFlight of rejected inputs
// (key, value and headers) and at most MaxRejectsInFlight of them in
// flight; the next Reject waits in its callback until one is written, or
// goes on when its partition's context ends. Every input is committed
// once its reject is written.
func TestRejectsInFlightAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value int
		fits  int
	}{
		{"by bytes", 1 << 20, MaxRejectBytesInFlight / (1<<20 + 1000 + 4)},
		{"by count", 10, MaxRejectsInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prod := &heldProducer{release: make(chan struct{})}
			p := &Policy{Rejects: "chronos-rejects", Producer: prod, Attempts: 1, AttemptTimeout: time.Minute, Logger: quietLogger()}
			var committed atomic.Int64
			in := rejectedInput{ctx: context.Background(), committed: &committed}
			raw := make([]byte, tc.value)
			err := &codecs.Error{Code: codecs.CodePayloadTooLarge, Reason: "test"}
			for range tc.fits {
				p.Reject(in, raw, err)
			}
			returned := make(chan struct{})
			go func() {
				p.Reject(in, raw, err)
				close(returned)
			}()
			select {
			case <-returned:
				t.Fatalf("a reject past the bound (%d in flight) did not wait", tc.fits)
			case <-time.After(100 * time.Millisecond):
			}

			ctx, cancel := context.WithCancel(context.Background())
			cancelled := make(chan struct{})
			go func() {
				p.Reject(rejectedInput{ctx: ctx, committed: &committed}, raw, err)
				close(cancelled)
			}()
			cancel()
			<-cancelled // its partition is going away: it goes on

			close(prod.release)
			<-returned
			require.Eventually(t, func() bool { return committed.Load() == int64(tc.fits+2) }, 10*time.Second, 10*time.Millisecond)
			p.mu.Lock()
			defer p.mu.Unlock()
			require.Zero(t, p.inflight)
			require.Zero(t, p.inflightBytes)
		})
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
