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
	view *goka.View
	mu   struct {
		sync.Mutex
		parsed map[string]parsedCalendar // by name: the dates of the value last seen
	}
}

type parsedCalendar struct {
	raw  string
	days map[schedule.Date]struct{}
}

// NewCalendars creates the view; Run keeps it up to date.
func NewCalendars(kafka clients.Config, layout topology.Layout) (*Calendars, error) {
	vopts := append(kafka.GokaViewOptions(), goka.WithViewStorageBuilder(storage.MemoryBuilder()), goka.WithViewAutoReconnect())
	v, err := goka.NewView(kafka.Brokers, layout.Calendars(), new(codec.Bytes), vopts...)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	c := &Calendars{view: v}
	c.mu.parsed = map[string]parsedCalendar{}
	return c, nil
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
// unknown or undecodable calendar, and while the view cannot be read).
func (c *Calendars) HasDate(name string, d schedule.Date) bool {
	v, err := c.view.Get(name)
	if err != nil || v == nil {
		return false
	}
	raw := v.([]byte)
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.mu.parsed[name]
	if !ok || p.raw != string(raw) {
		p = parsedCalendar{raw: string(raw), days: map[schedule.Date]struct{}{}}
		if _, days, err := codecs.DecodeCalendarDef(raw); err == nil {
			for _, day := range days {
				p.days[day] = struct{}{}
			}
		}
		c.mu.parsed[name] = p
	}
	_, ok = p.days[d]
	return ok
}
