package views

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// History is a goka View over the history group's table (each job's last
// fires and commands, see processors/history), kept in local Pebble stores
// and up to date while it runs. Safe for concurrent use.
type History struct {
	view       *clients.View
	partitions int32
}

// NewHistory creates the view, its partition stores in dataDir with opts
// (a Logger is set from log); Run keeps it up to date.
func NewHistory(kafka clients.Config, layout topology.Layout, dataDir string, opts store.Options, log *slog.Logger) (*History, error) {
	opts.Logger = func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }
	builder := store.Builder(dataDir, opts)
	vopts := append(kafka.GokaViewOptions(), goka.WithViewAutoReconnect())
	v, err := clients.NewView(kafka.Brokers, layout.HistoryTable(), new(codec.Bytes), builder, vopts...)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	return &History{view: v, partitions: layout.Partitions}, nil
}

// Run keeps the view up to date until ctx is done.
func (h *History) Run(ctx context.Context) error { return h.view.Run(ctx) }

// Ready reports whether the view has caught up with the table.
func (h *History) Ready() error {
	if err := h.view.Err(); err != nil {
		return fmt.Errorf("history view stopped (restart the process): %w", err)
	}
	if !h.view.Recovered() {
		return errors.New("history view is recovering")
	}
	return nil
}

// Fire is one fire of a job's history, as the API shows it.
type Fire struct {
	FireID      string    `json:"fire_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Trigger     string    `json:"trigger,omitempty"`
	Bucket      string    `json:"bucket,omitempty"`
	Missed      int64     `json:"missed,omitempty"`
	// DispatchedAt is the earliest fired_at of the fire's dispatch events
	// (absent while only a result has been seen); DelaySeconds is
	// DispatchedAt - ScheduledAt.
	DispatchedAt *time.Time `json:"dispatched_at,omitempty"`
	DelaySeconds *float64   `json:"delay_seconds,omitempty"`
	// Status is the executors' latest report (started, succeeded, failed,
	// skipped), or "dispatched" when none has come yet.
	Status     string     `json:"status"`
	Attempt    int        `json:"attempt,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// DurationSeconds is FinishedAt - StartedAt when both are known.
	DurationSeconds *float64 `json:"duration_seconds,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// Change is one command of a job's history.
type Change struct {
	At time.Time `json:"at"`
	// Actor is the API token that sent the command ("" for records
	// produced to chronos-jobs directly).
	Actor  string `json:"actor"`
	Op     string `json:"op"`
	Detail string `json:"detail,omitempty"`
	// Partition and Offset locate the command on chronos-jobs.
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// Get returns a job's history: its fires newest first and its changes
// newest first (both empty for a job the history group has not seen).
func (h *History) Get(id string) ([]Fire, []Change, error) {
	if err := h.Ready(); err != nil {
		return nil, nil, err
	}
	v, err := h.view.Get(id)
	if err != nil {
		return nil, nil, fmt.Errorf("views: %w", err)
	}
	b, _ := v.([]byte)
	rec, err := codecs.DecodeHistory(b)
	if err != nil {
		return nil, nil, fmt.Errorf("views: job %q: %w", id, err)
	}
	return FiresOf(id, rec), ChangesOf(topology.Partition(id, h.partitions), rec), nil
}

// FiresOf returns the fires of a job's history record, newest first.
func FiresOf(id string, rec codecs.History) []Fire {
	out := make([]Fire, 0, len(rec.Fires))
	for i := len(rec.Fires) - 1; i >= 0; i-- {
		f := rec.Fires[i]
		o := Fire{FireID: id + "@" + f.Suffix, ScheduledAt: f.ScheduledAt, Trigger: f.Trigger, Bucket: f.Bucket, Missed: f.Missed,
			Status: f.Status, Attempt: f.Attempt, StartedAt: timePtr(f.StartedAt), FinishedAt: timePtr(f.FinishedAt), Error: f.Error}
		if f.Dispatched {
			o.DispatchedAt = timePtr(f.FiredAt)
			o.DelaySeconds = secondsBetween(f.ScheduledAt, f.FiredAt)
		}
		if o.Status == "" {
			o.Status = "dispatched"
		}
		// Results of one attempt may disagree (a finish reported alone,
		// then a later start): a duration needs the finish at or after
		// the start.
		if !f.StartedAt.IsZero() && !f.FinishedAt.IsZero() && !f.FinishedAt.Before(f.StartedAt) {
			o.DurationSeconds = secondsBetween(f.StartedAt, f.FinishedAt)
		}
		out = append(out, o)
	}
	return out
}

// ChangesOf returns the changes of a job's history record, newest first.
func ChangesOf(partition int32, rec codecs.History) []Change {
	out := make([]Change, 0, len(rec.Changes))
	for i := len(rec.Changes) - 1; i >= 0; i-- {
		c := rec.Changes[i]
		out = append(out, Change{At: c.At, Actor: c.Actor, Op: c.Op, Detail: c.Detail, Partition: partition, Offset: c.Offset})
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// secondsBetween is to - from in seconds. time.Time.Sub saturates at 292
// years, and a result's times may be anywhere from 1970 to 9999.
func secondsBetween(from, to time.Time) *float64 {
	s := float64(to.Unix()-from.Unix()) + float64(to.Nanosecond()-from.Nanosecond())/1e9
	return &s
}
