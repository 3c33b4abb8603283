package clients

import (
	"context"
	"errors"
	"sync"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
)

// ErrViewClosed is what View.Get returns once the view has stopped.
var ErrViewClosed = errors.New("view closed")

// View is a goka view whose Recovered and Get may be called while Run
// returns. goka's View.Run closes its partitions when it returns and sets
// their slice to nil without a lock, while Recovered and Get read it: a
// data race, found by the race detector when an instance was stopped
// during its start (adversary round 56: the clock table view's Ready
// polled while it closed). View marks itself closing, under a lock that
// Recovered and Get hold while they read, before goka can close:
//   - when ctx ends, before it cancels goka's run (which runs on a
//     context of its own);
//   - when a partition's storage cannot be built or opened, before the
//     error reaches goka (goka's Run returns then, on its own: the views
//     reconnect on every other error; adversary round 57).
//
// Err then says why the view stopped.
type View struct {
	view    *goka.View
	mu      sync.RWMutex
	closing bool
	err     error // why it stopped (nil: not stopped, or ctx ended)
}

// NewView creates a goka view of topic (goka.NewView's arguments) whose
// partitions are stored by builder.
func NewView(brokers []string, topic goka.Table, c goka.Codec, builder storage.Builder, opts ...goka.ViewOption) (*View, error) {
	v := &View{}
	gv, err := goka.NewView(brokers, topic, c, append(opts, goka.WithViewStorageBuilder(v.guard(builder)))...)
	if err != nil {
		return nil, err
	}
	v.view = gv
	return v, nil
}

// Run runs the view until ctx is done (goka.View.Run), or until its
// storage fails. Call it once.
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
		v.stop(nil)
		cancel()
	}()
	err := v.view.Run(inner)
	v.stop(err)
	return err
}

// stop marks the view closing, and why (the first error kept).
func (v *View) stop(err error) {
	v.mu.Lock()
	v.closing = true
	if v.err == nil {
		v.err = err
	}
	v.mu.Unlock()
}

// Err reports why the view stopped on its own (nil while it runs and
// after ctx ended).
func (v *View) Err() error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.err
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

// guard wraps builder so that a storage that cannot be built or opened
// stops the view before goka sees the error.
func (v *View) guard(builder storage.Builder) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		st, err := builder(topic, partition)
		if err != nil {
			v.stop(err)
			return nil, err
		}
		return &openGuard{Storage: st, v: v}, nil
	}
}

// openGuard is a partition's storage whose failed Open stops its view.
type openGuard struct {
	storage.Storage
	v *View
}

func (g *openGuard) Open() error {
	err := g.Storage.Open()
	if err != nil {
		g.v.stop(err)
	}
	return err
}
