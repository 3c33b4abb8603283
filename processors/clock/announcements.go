package clock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/topology"
)

// Announcements follows the clock table (the time the clock group last
// announced, one record per announcement) through a goka view held in
// memory, so that every instance knows the system's announced time
// whatever its own partitions are doing. The fan-out lateness of a
// partition is measured from it: a pod whose every callback is stuck, or
// whose fan-out is too slow to read the next advance, consumes no newer
// advance, and measured against the advances it consumed it read as on
// time (adversary 19d). Safe for concurrent use.
type Announcements struct {
	view   *clients.View
	latest atomic.Int64 // unix nanos; 0: none read
}

// NewAnnouncements returns a view of layout's clock table built with opts
// (clients.Config.GokaViewOptions); Run runs it.
func NewAnnouncements(brokers []string, layout topology.Layout, opts ...goka.ViewOption) (*Announcements, error) {
	a := &Announcements{}
	opts = append(opts, goka.WithViewAutoReconnect(),
		goka.WithViewCallback(func(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
			if err := goka.DefaultUpdate(ctx, s, key, value); err != nil {
				return err
			}
			if t, err := decodeTime(value); err == nil {
				a.note(t)
			}
			return nil
		}))
	v, err := clients.NewView(brokers, layout.ClockTable(), new(codec.Bytes), storage.MemoryBuilder(), opts...)
	if err != nil {
		return nil, fmt.Errorf("clock: announcements view: %w", err)
	}
	a.view = v
	return a, nil
}

// Ready reports whether the view has read the clock table up to its end
// once (nil), or why not.
func (a *Announcements) Ready() error {
	if !a.view.Recovered() {
		return errors.New("clock table view is recovering")
	}
	return nil
}

// Run runs the view until ctx is done.
func (a *Announcements) Run(ctx context.Context) error { return a.view.Run(ctx) }

// note raises the latest announced time to t (never lowers it: a table
// record older than one read, replayed after a reconnect, changes nothing).
func (a *Announcements) note(t time.Time) {
	if t.IsZero() {
		return
	}
	n := t.UnixNano()
	for {
		cur := a.latest.Load()
		if n <= cur || a.latest.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Latest returns the latest announced time the view has read, zero before
// the first.
func (a *Announcements) Latest() time.Time {
	if a == nil {
		return time.Time{}
	}
	n := a.latest.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
