package clock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TickKey is the key of every chronos-clock record.
const TickKey = "clock"

// Ticker sends this instance's wall time to chronos-clock at every
// resolution boundary (plus a small offset, so the boundary is past).
type Ticker struct {
	Client     *kgo.Client
	Topic      string
	Resolution time.Duration
	Instance   string
	// Now is the wall clock (default time.Now).
	Now func() time.Time

	acked atomic.Int64 // unix nanos of the tick last acknowledged by the broker
}

// LastAcked returns the time carried by the last tick the broker
// acknowledged (zero before the first).
func (t *Ticker) LastAcked() time.Time {
	n := t.acked.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Run ticks until ctx is done. Produce errors are retried on the next tick;
// Run returns nil when ctx is cancelled.
func (t *Ticker) Run(ctx context.Context) error {
	now := t.Now
	if now == nil {
		now = time.Now
	}
	if t.Resolution <= 0 {
		return fmt.Errorf("clock: ticker resolution %s", t.Resolution)
	}
	for {
		t.send(ctx, now())
		n := now()
		wait := n.Truncate(t.Resolution).Add(t.Resolution + 2*time.Millisecond).Sub(n)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (t *Ticker) send(ctx context.Context, at time.Time) {
	rec := &kgo.Record{Topic: t.Topic, Key: []byte(TickKey), Value: codecs.EncodeInternal(codecs.Tick{Time: at.UTC(), Instance: t.Instance})}
	t.Client.Produce(ctx, rec, func(_ *kgo.Record, err error) {
		if err == nil {
			t.acked.Store(at.UnixNano())
		}
	})
}
