package inputs

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// slowProducer acknowledges every record after a delay.
type slowProducer struct{ delay time.Duration }

func (p slowProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	time.Sleep(p.delay)
	return kgo.ProduceResults{{Record: rs[0]}}
}

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
	committed   *atomic.Int64
	group       goka.Group
}

func (c rejectedInput) Group() goka.Group { return c.group }

func (c rejectedInput) Context() context.Context { return context.Background() }
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
// nothing, a Policy holds at most MaxRejectBytesInFlight of rejected
// inputs (key, value and headers) and at most MaxRejectsInFlight of them;
// an input rejected past that is dropped once no reject has begun or
// ended for RejectStall (counted with reason rejects_backlog), without
// holding its commit, and once the held rejects are written every held
// input is committed and the Policy takes rejects again.
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
			reg := prometheus.NewRegistry()
			p := &Policy{Rejects: "chronos-rejects", Producer: prod, Attempts: 1, AttemptTimeout: time.Minute,
				Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(reg)}
			var committed atomic.Int64
			in := rejectedInput{committed: &committed}
			raw := make([]byte, tc.value)
			err := &codecs.Error{Code: codecs.CodePayloadTooLarge, Reason: "test"}
			for range tc.fits {
				p.Reject(in, raw, err)
			}
			backlog := func() float64 {
				return testutil.ToFloat64(p.Metrics.dropped.WithLabelValues("chronos-jobs", DropBacklog))
			}
			require.Zero(t, backlog())
			returned := make(chan struct{})
			go func() {
				p.Reject(in, raw, err)
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(RejectStall + 10*time.Second):
				t.Fatal("a reject past the bound waited past the stall")
			}
			require.Equal(t, 1.0, backlog(), "dropped: %d in flight", tc.fits)
			require.Zero(t, committed.Load(), "no held commit completed, none taken for the dropped one")
			p.mu.Lock()
			require.Equal(t, tc.fits, p.budgets[""].inflight)
			p.mu.Unlock()

			close(prod.release)
			require.Eventually(t, func() bool { return committed.Load() == int64(tc.fits) }, 10*time.Second, 10*time.Millisecond)
			require.Eventually(t, func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.budgets[""].inflight == 0 && p.budgets[""].bytes == 0
			}, 10*time.Second, 10*time.Millisecond)
			p.Reject(in, raw, err)
			require.Eventually(t, func() bool { return committed.Load() == int64(tc.fits+1) }, 10*time.Second, 10*time.Millisecond)
			require.Equal(t, 1.0, backlog(), "room again")
		})
	}
}

// TestRejectBurstOnAWorkingTopicDropsNothing: a burst of rejects larger
// than MaxRejectsInFlight, from several partitions at once, on a topic
// that answers each in a few milliseconds: the rejects past the bound
// wait for room, none is dropped, every input is committed (adversary
// round 54: dropping at the bound without waiting lost 68 of 20,000).
func TestRejectBurstOnAWorkingTopicDropsNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := &Policy{Rejects: "chronos-rejects", Producer: slowProducer{delay: 20 * time.Millisecond},
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(reg)}
	var committed atomic.Int64
	in := rejectedInput{committed: &committed}
	err := &codecs.Error{Code: codecs.CodeMalformed, Reason: "test"}
	const partitions, each = 4, MaxRejectsInFlight
	done := make(chan struct{})
	for range partitions {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				p.Reject(in, []byte("{"), err)
			}
		}()
	}
	for range partitions {
		<-done
	}
	require.Eventually(t, func() bool { return committed.Load() == partitions*each }, 30*time.Second, 10*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(p.Metrics.dropped.WithLabelValues("chronos-jobs", DropBacklog)))
}

// scriptedProducer fails the records whose key is "fail" at once (a
// missing topic), holds the others until released.
type scriptedProducer struct{ release chan struct{} }

func (p scriptedProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	if string(rs[0].Key) == "fail" {
		return kgo.ProduceResults{{Record: rs[0], Err: errors.New("rejects topic gone")}}
	}
	select {
	case <-p.release:
		return kgo.ProduceResults{{Record: rs[0]}}
	case <-ctx.Done():
		return kgo.ProduceResults{{Record: rs[0], Err: ctx.Err()}}
	}
}

// failingInput is a rejectedInput whose reject the scriptedProducer fails.
type failingInput struct{ rejectedInput }

func (failingInput) Key() string { return "fail" }

// TestRejectsBoundPerGroup: a group whose rejects fill the bound does
// not hold up another group's rejects (adversary round 54: the history
// group's rejects delayed the scheduler's fires), and once a group's last
// reject to end was dropped (the topic does not take them), a reject past
// its bound is dropped at once, without waiting for the stall.
func TestRejectsBoundPerGroup(t *testing.T) {
	prod := scriptedProducer{release: make(chan struct{})}
	defer close(prod.release)
	reg := prometheus.NewRegistry()
	p := &Policy{Rejects: "chronos-rejects", Producer: prod, Attempts: 1, AttemptTimeout: time.Minute,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(reg)}
	var committed atomic.Int64
	history := rejectedInput{committed: &committed, group: "history"}
	err := &codecs.Error{Code: codecs.CodeMalformed, Reason: "test"}
	for range MaxRejectsInFlight {
		p.Reject(history, []byte("{"), err)
	}
	backlog := func() float64 {
		return testutil.ToFloat64(p.Metrics.dropped.WithLabelValues("chronos-jobs", DropBacklog))
	}
	scheduler := rejectedInput{committed: &committed, group: "scheduler"}
	start := time.Now()
	p.Reject(scheduler, []byte("{"), err)
	require.Less(t, time.Since(start), RejectStall/2, "the scheduler's reject waited for the history's")
	require.Zero(t, backlog())

	// The scheduler's rejects fill its bound with held ones but the last,
	// which the topic refuses: past the bound, the next is dropped at once.
	for range MaxRejectsInFlight - 2 {
		p.Reject(scheduler, []byte("{"), err)
	}
	p.Reject(failingInput{scheduler}, []byte("{"), err)
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.budgets["scheduler"].dropped && p.budgets["scheduler"].inflight == MaxRejectsInFlight-1
	}, 10*time.Second, time.Millisecond)
	p.Reject(scheduler, []byte("{"), err) // fills the bound again
	start = time.Now()
	p.Reject(scheduler, []byte("{"), err)
	require.Less(t, time.Since(start), RejectStall/2, "a reject past the bound waited though the topic refused the last")
	require.Equal(t, 1.0, backlog())
}
