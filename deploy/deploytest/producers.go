package deploytest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-scheduler/chronos/processors/scheduler"
)

// Slow is a dispatch producer that takes the delay set by SetDelay per
// produce while it is set: a slow broker (or a CPU-bound fan-out), not a
// stuck one.
type Slow struct {
	scheduler.Producer
	d atomic.Int64 // nanoseconds
}

// SetDelay makes every later produce take d (0: as fast as the broker).
func (s *Slow) SetDelay(d time.Duration) { s.d.Store(int64(d)) }

// ProduceSync produces msgs after the delay.
func (s *Slow) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	time.Sleep(time.Duration(s.d.Load())) // the slowness simulated, not a wait for an effect
	return s.Producer.ProduceSync(ctx, topic, msgs)
}

// Hang is a dispatch producer that, once Armed, blocks every produce until
// Open is closed: a pod whose path to the dispatch broker hangs (a
// half-open connection, a partitioned node), so every partition it owns is
// stuck in its fan-out, while the other pods dispatch. Blocked counts the
// produces that blocked.
type Hang struct {
	scheduler.Producer
	Armed   atomic.Bool
	Open    chan struct{}
	Blocked atomic.Int64
}

// ProduceSync produces msgs, first waiting for Open (or ctx) when armed.
func (h *Hang) ProduceSync(ctx context.Context, topic string, msgs []scheduler.Msg) error {
	if h.Armed.Load() {
		h.Blocked.Add(1)
		select {
		case <-h.Open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Producer.ProduceSync(ctx, topic, msgs)
}

// SimNow is a settable wall clock for instance.Config.Now.
type SimNow struct {
	mu sync.Mutex
	t  time.Time
}

// NewSimNow is a clock at t.
func NewSimNow(t time.Time) *SimNow { return &SimNow{t: t} }

// Now is the time last set.
func (f *SimNow) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }

// Set sets the time.
func (f *SimNow) Set(t time.Time) { f.mu.Lock(); defer f.mu.Unlock(); f.t = t }
