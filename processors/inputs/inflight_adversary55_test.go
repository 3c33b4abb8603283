package inputs

// Adversary round 55: the stall check of admit (RejectStall), attacked
// with fake producers at the unit level.
//
// Found: the stall was timed from the last reject to end, so a burst after
// an idle second with one slow reject in flight dropped 2,061 of 4,096; and
// a topic answering in 1.2 s lost 3,072 of 4,096. Fixed in 1f80662 (the
// stall timed from the last reject to begin or end, 5 s, per group).

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv55Input is a rejected input with its own key and context.
type adv55Input struct {
	rejectedInput
	key string
	ctx context.Context
}

func (c adv55Input) Key() string { return c.key }
func (c adv55Input) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// adv55KeyedProducer answers records whose key starts with "stuck" only
// after stuck (or its context's end), every other record after delay.
type adv55KeyedProducer struct {
	delay time.Duration
	stuck time.Duration
	done  atomic.Int64
}

func (p *adv55KeyedProducer) ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	d := p.delay
	if strings.HasPrefix(string(rs[0].Key), "stuck") {
		d = p.stuck
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		p.done.Add(1)
		return kgo.ProduceResults{{Record: rs[0]}}
	case <-ctx.Done():
		return kgo.ProduceResults{{Record: rs[0], Err: ctx.Err()}}
	}
}

func adv55Policy(prod Producer) *Policy {
	return &Policy{Rejects: "chronos-rejects", Producer: prod,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry())}
}

func adv55Backlog(p *Policy) float64 {
	return testutil.ToFloat64(p.Metrics.dropped.WithLabelValues("chronos-jobs", DropBacklog))
}

// adv55Burst rejects each inputs from partitions goroutines at once and
// waits for every commit.
func adv55Burst(t *testing.T, p *Policy, committed *atomic.Int64, partitions, each int) {
	t.Helper()
	start := committed.Load()
	var wg sync.WaitGroup
	err := &codecs.Error{Code: codecs.CodeMalformed, Reason: "test"}
	for i := range partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := adv55Input{rejectedInput: rejectedInput{committed: committed}, key: "job-" + string(rune('a'+i))}
			for range each {
				p.Reject(in, []byte("{"), err)
			}
		}()
	}
	wg.Wait()
	want := start + int64(partitions*each)
	// A dropped input is committed by goka as its callback ends, without DeferCommit.
	require.Eventually(t, func() bool { return committed.Load()+int64(adv55Backlog(p)) == want }, 20*time.Second, 10*time.Millisecond)
}

// TestAdversary55SlowButWorkingTopicDropsNothing (idea 2): a rejects
// topic that answers every reject, each after 1.2 s (slower than
// RejectStall, far within AttemptTimeout): a burst of 4 x 1,024 rejects.
// Promise: rejects are dropped only when the topic is missing or stalled.
func TestAdversary55SlowButWorkingTopicDropsNothing(t *testing.T) {
	for _, delay := range []time.Duration{800 * time.Millisecond, 1200 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			prod := &adv55KeyedProducer{delay: delay}
			p := adv55Policy(prod)
			var committed atomic.Int64
			adv55Burst(t, p, &committed, 4, MaxRejectsInFlight)
			t.Logf("delay %v: %d of %d rejects written, %.0f dropped (rejects_backlog)",
				delay, prod.done.Load(), 4*MaxRejectsInFlight, adv55Backlog(p))
			require.Zero(t, adv55Backlog(p), "rejects dropped on a topic that answers every produce in %v", delay)
		})
	}
}

// TestAdversary55StaleLastEndAfterIdle (idea 1): one reject stays in
// flight (its rejects partition is slow: 4 s, within AttemptTimeout)
// through 1.5 s of idleness; then a burst of 4 x 1,024 rejects comes, and
// every one of them is written in 20 ms. The stall is timed from the last
// end, before the idle period, not from the burst: are rejects of a
// burst on a working topic dropped?
func TestAdversary55StaleLastEndAfterIdle(t *testing.T) {
	prod := &adv55KeyedProducer{delay: 20 * time.Millisecond, stuck: 4 * time.Second}
	p := adv55Policy(prod)
	var committed atomic.Int64
	err := &codecs.Error{Code: codecs.CodeMalformed, Reason: "test"}
	// A first reject ends normally (lastEnd), then one slow one begins.
	p.Reject(adv55Input{rejectedInput: rejectedInput{committed: &committed}, key: "job"}, []byte("{"), err)
	require.Eventually(t, func() bool { return committed.Load() == 1 }, 5*time.Second, time.Millisecond)
	p.Reject(adv55Input{rejectedInput: rejectedInput{committed: &committed}, key: "stuck"}, []byte("{"), err)
	time.Sleep(1500 * time.Millisecond)
	adv55Burst(t, p, &committed, 4, MaxRejectsInFlight)
	t.Logf("with one slow reject in flight through idleness: %.0f of %d burst rejects dropped (rejects_backlog)",
		adv55Backlog(p), 4*MaxRejectsInFlight)
	require.Zero(t, adv55Backlog(p), "rejects of a burst on a working topic dropped: the stall was timed from before the burst")
}

// TestAdversary55LargeRejectStarves (idea 3): small rejected inputs
// (60 KiB: the byte bound binds before the count bound) keep the bytes in
// flight near MaxRejectBytesInFlight on a working topic (20 ms a
// reject); one 1 MiB rejected input on another partition waits for room
// for 1 MiB. How long is its callback held compared with the small ones?
func TestAdversary55LargeRejectStarves(t *testing.T) {
	prod := &adv55KeyedProducer{delay: 20 * time.Millisecond}
	p := adv55Policy(prod)
	var committed atomic.Int64
	err := &codecs.Error{Code: codecs.CodePayloadTooLarge, Reason: "test"}
	const flood = 5 * time.Second
	stop := time.Now().Add(flood)
	var wg sync.WaitGroup
	var smallMax atomic.Int64
	var smalls atomic.Int64
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := adv55Input{rejectedInput: rejectedInput{committed: &committed}, key: "small-" + string(rune('a'+i))}
			raw := make([]byte, 60<<10)
			for time.Now().Before(stop) {
				t0 := time.Now()
				p.Reject(in, raw, err)
				if d := int64(time.Since(t0)); d > smallMax.Load() {
					smallMax.Store(d)
				}
				smalls.Add(1)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	in := adv55Input{rejectedInput: rejectedInput{committed: &committed}, key: "large"}
	t0 := time.Now()
	p.Reject(in, make([]byte, 1<<20), err)
	large := time.Since(t0)
	wg.Wait()
	t.Logf("flood %v, %d small rejects, longest small wait %v, the 1 MiB reject waited %v, %.0f dropped",
		flood, smalls.Load(), time.Duration(smallMax.Load()), large, adv55Backlog(p))
	require.Less(t, large, 2*RejectStall, "a large rejected input held its callback (its partition) while small rejects kept the bytes in flight high")
}
