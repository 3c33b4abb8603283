package views

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/topology"
)

// Calendars is the view of the named calendars (chronos-calendars), kept
// in memory: the scheduler asks it at each fire whether a calendar holds
// a date (schedule.CalendarSource), the API reads calendars from it. Safe
// for concurrent use.
type Calendars struct {
	view *clients.View
	mu   struct {
		sync.RWMutex
		days map[string]map[schedule.Date]struct{} // by name: the dates of the value last read
	}
}

// NewCalendars creates the view; Run keeps it up to date. Each record the
// view reads is parsed once, as it arrives (the view's update callback),
// so HasDate is a map lookup (adversary 14c: parsing on lookup compared
// the whole stored value under one lock, 1.3 µs a lookup at 5000 dates).
func NewCalendars(kafka clients.Config, layout topology.Layout) (*Calendars, error) {
	c := &Calendars{}
	c.mu.days = map[string]map[schedule.Date]struct{}{}
	vopts := append(kafka.GokaViewOptions(), goka.WithViewAutoReconnect(),
		goka.WithViewCallback(func(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
			if err := goka.DefaultUpdate(ctx, s, key, value); err != nil {
				return err
			}
			c.update(key, value)
			return nil
		}))
	v, err := clients.NewView(kafka.Brokers, layout.Calendars(), new(codec.Bytes), storage.MemoryBuilder(), vopts...)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	c.view = v
	return c, nil
}

// update records the dates of calendar name as its record now says: none
// for a tombstone or a record that does not decode.
func (c *Calendars) update(name string, value []byte) {
	var days map[schedule.Date]struct{}
	if value != nil {
		if _, ds, err := codecs.DecodeCalendarDef(value); err == nil {
			days = make(map[schedule.Date]struct{}, len(ds))
			for _, d := range ds {
				days[d] = struct{}{}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if days == nil {
		delete(c.mu.days, name)
		return
	}
	c.mu.days[name] = days
}

// Run keeps the view up to date until ctx is done.
func (c *Calendars) Run(ctx context.Context) error { return c.view.Run(ctx) }

// Ready reports whether the view has caught up with the topic.
func (c *Calendars) Ready() error {
	if !c.view.Recovered() {
		return errors.New("calendars view is recovering")
	}
	return nil
}

// Get returns the calendar name; ok is false when there is none (or its
// record does not decode: the API refuses to write such a record, so it
// came from elsewhere and is treated as absent).
func (c *Calendars) Get(name string) (def codecs.CalendarDef, ok bool, err error) {
	v, err := c.view.Get(name)
	if err != nil || v == nil {
		return codecs.CalendarDef{}, false, err
	}
	def, _, derr := codecs.DecodeCalendarDef(v.([]byte))
	return def, derr == nil, nil
}

// HasDate reports whether calendar name holds date d (false for an
// unknown or undecodable calendar, and before the view has read it).
func (c *Calendars) HasDate(name string, d schedule.Date) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.mu.days[name][d]
	return ok
}
