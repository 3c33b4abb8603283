package clients

import (
	"context"
	"errors"
	"sync"

	"github.com/lovoo/goka"
)

// ErrViewClosed is what View.Get returns once the view has stopped.
var ErrViewClosed = errors.New("view closed")

// View is a goka view whose Recovered and Get may be called while Run
// returns. goka's View.Run closes its partitions when it returns and sets
// their slice to nil without a lock, while Recovered and Get read it: a
// data race, found by the race detector when an instance was stopped
// during its start (adversary round 56: the clock table view's Ready
// polled while it closed). View.Run cancels goka's Run itself, after
// marking the view closing under a lock that Recovered and Get hold while
// they read, so no read overlaps the close. A goka view that returns on
// its own (an error; Chronos's views reconnect, so only a storage error)
// closes before the mark, as before.
type View struct {
	view    *goka.View
	mu      sync.RWMutex
	closing bool
}

// NewView creates a goka view of topic (goka.NewView's arguments).
func NewView(brokers []string, topic goka.Table, c goka.Codec, opts ...goka.ViewOption) (*View, error) {
	v, err := goka.NewView(brokers, topic, c, opts...)
	if err != nil {
		return nil, err
	}
	return &View{view: v}, nil
}

// Run runs the view until ctx is done (goka.View.Run). Call it once.
func (v *View) Run(ctx context.Context) error {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case <-ctx.Done():
		case <-returned:
		}
		v.markClosing()
		cancel()
	}()
	err := v.view.Run(inner)
	v.markClosing()
	return err
}

func (v *View) markClosing() {
	v.mu.Lock()
	v.closing = true
	v.mu.Unlock()
}

// Recovered reports whether the view has read its table up to the end
// once (goka.View.Recovered); false once it is stopping.
func (v *View) Recovered() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return !v.closing && v.view.Recovered()
}

// Get reads key's value (goka.View.Get), or ErrViewClosed once the view
// is stopping.
func (v *View) Get(key string) (any, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.closing {
		return nil, ErrViewClosed
	}
	return v.view.Get(key)
}
