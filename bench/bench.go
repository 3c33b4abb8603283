// Package bench measures a Chronos system end to end, the way `chronos
// bench` reports it: it registers N jobs through chronos-jobs, consumes
// chronos-dispatch in a separate consumer, and reports fires per second,
// fire delay (receipt time minus scheduled_at), missed and duplicate
// fire_ids, CPU and memory, next to the raw transport ceiling of a plain
// producer to the same broker with the same record size and settings.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Mode is the schedule mix of the registered jobs.
type Mode string

// Modes.
const (
	// ModeEvery: every job fires every Every, spread evenly over whole
	// seconds (job i starts at second i mod Every).
	ModeEvery Mode = "every"
	// ModeAligned: every job is due once, at the same second.
	ModeAligned Mode = "aligned"
	// ModeBucket: every job is a member of one bucket (its own schedule
	// far off), and one bucket trigger fires them all at once: the burst
	// through the bucket fan-out (chunks that write and wait for their
	// start and end, docs/architecture.md) instead of the due index.
	ModeBucket Mode = "bucket"
)

// BenchBucket is the bucket ModeBucket registers the jobs in.
const BenchBucket = "bench"

// Config is one benchmark run.
type Config struct {
	Kafka  clients.Config
	Layout topology.Layout
	Jobs   int
	Mode   Mode
	// Every is the interval of ModeEvery (default 1m).
	Every time.Duration
	// Duration is how long fires are measured (ModeEvery), or the most the
	// run waits for the burst to drain (ModeAligned).
	Duration time.Duration
	// PayloadBytes is the size of every job's payload, a JSON string of
	// random hex digits (0: no payload; at most 16 MiB). The raw ceiling
	// uses records of the same size.
	PayloadBytes int
	// InstancePID, if set, is the process id of the Chronos instance under
	// test (with an external instance): the report gives its peak RSS.
	InstancePID int
	// Progress receives progress lines (nil: none).
	Progress io.Writer
	// Measuring, if set, is called once registration is done, before the
	// measured window (chronos bench starts its CPU profile there).
	Measuring func()
	// StoreWrites, if set, returns the bytes the scheduler's partition
	// stores have written (chronos bench: its own instance's): the report
	// gives their growth over the measured window per fire.
	StoreWrites func() store.Writes
	// StoresHeld, if set, counts the stores whose compactions are held
	// back (chronos bench: its own process's, store.OpenHeld): sampled
	// from the start of registration to the end of the window, the report
	// says whether and when a flood or a recovery held them.
	StoresHeld func() store.Held
	// History, when set, measures the history group (chronos-history): its
	// lag on the dispatch topic at the end of the window, and how long it
	// then takes to consume every dispatch event.
	History bool
	// FirstFireAfter, when set, is how long after registration begins the
	// first fires are due (the burst's second with ModeAligned). Default:
	// estimated from Jobs at ~20,000 puts/s (40,000 with ModeEvery); on a
	// loaded machine registration can overrun it, and a burst then fires
	// while jobs are still being registered.
	FirstFireAfter time.Duration
	// Jitter, when set, is every job's jitter (docs/schedules.md#jitter):
	// at most 1h, and at most Every in ModeEvery.
	Jitter time.Duration
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Jobs < 1 || c.Jobs > 50_000_000 {
		errs = append(errs, fmt.Errorf("bench: jobs %d, want 1..50000000", c.Jobs))
	}
	switch c.Mode {
	case ModeEvery:
		if c.Every < time.Second || c.Every%time.Second != 0 {
			errs = append(errs, fmt.Errorf("bench: every %s, want whole seconds >= 1s", c.Every))
		}
	case ModeAligned, ModeBucket:
	default:
		errs = append(errs, fmt.Errorf("bench: mode %q, want every, aligned or bucket", c.Mode))
	}
	if c.PayloadBytes < 0 || c.PayloadBytes > 16<<20 || (c.PayloadBytes > 0 && c.PayloadBytes < 2) {
		errs = append(errs, fmt.Errorf("bench: payload bytes %d, want 0 or 2..16MiB", c.PayloadBytes))
	}
	if c.FirstFireAfter < 0 {
		errs = append(errs, fmt.Errorf("bench: first fire after %s, want >= 0", c.FirstFireAfter))
	}
	if c.Jitter < 0 || c.Jitter > codecs.MaxJitter || (c.Mode == ModeEvery && c.Jitter > c.Every) {
		errs = append(errs, fmt.Errorf("bench: jitter %s, want 0..1h and at most --every", c.Jitter))
	}
	if c.Duration < time.Second {
		errs = append(errs, fmt.Errorf("bench: duration %s, want >= 1s", c.Duration))
	}
	return errors.Join(errs...)
}

// Report is what a run measured.
type Report struct {
	// HistoryLag is the history group's lag on the dispatch topic at the
	// end of the window, HistoryCatchUp how long it then took to reach 0
	// (-1: not within a minute); both absent without Config.History.
	HistoryLag       *int64         `json:"history_lag,omitempty"`
	HistoryCatchUp   *time.Duration `json:"history_catch_up_ns,omitempty"`
	Jobs             int            `json:"jobs"`
	Mode             Mode           `json:"mode"`
	Every            string         `json:"every,omitempty"`
	Registration     time.Duration  `json:"registration_ns"`
	RegistrationRate float64        `json:"registration_per_second"`
	Window           time.Duration  `json:"window_ns"`
	Expected         int64          `json:"expected_fires"`
	Fires            int64          `json:"fires"`
	FiresPerSecond   float64        `json:"fires_per_second"`
	Drain            time.Duration  `json:"drain_ns,omitempty"`
	DelayP50         time.Duration  `json:"delay_p50_ns"`
	DelayP99         time.Duration  `json:"delay_p99_ns"`
	DelayMax         time.Duration  `json:"delay_max_ns"`
	// StartP99 is the p99 of fired_at minus scheduled_at: how late the
	// fan-out of a fire's chunk began. The rest of the delay is encoding,
	// producing, the broker's acks and the measuring consumer.
	StartP99 time.Duration `json:"start_p99_ns"`
	// Slices are the delays of consecutive 10-second slices of a steady
	// window: a p99 that grows from slice to slice is a growing backlog.
	Slices       []Slice `json:"slices,omitempty"`
	Missed       int64   `json:"missed"`
	Duplicates   int64   `json:"duplicates"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// InstancePeakRSSBytes is the peak RSS (VmHWM) of the instance process
	// (Config.InstancePID, or this process when the instance runs in it).
	InstancePeakRSSBytes int64   `json:"instance_peak_rss_bytes,omitempty"`
	PayloadBytes         int     `json:"payload_bytes,omitempty"`
	RawPerSecond         float64 `json:"raw_records_per_second"`
	RawRatio             float64 `json:"ratio_to_raw"`
	// RawGokaPerSecond is the same raw ceiling through goka's own producer
	// (sarama), the alternative to the franz-go client dispatch events use.
	RawGokaPerSecond float64 `json:"raw_goka_records_per_second"`
	RecordBytes      int     `json:"record_bytes"`
	// Jitter is the jobs' jitter (omitted: none). DueDelayP99 is the p99
	// of receipt minus due_at (the jittered time; scheduled_at without a
	// jitter); PeakPerSecond the most fires received in one wall-clock
	// second: what a jitter spreads.
	Jitter        string        `json:"jitter,omitempty"`
	DueDelayP99   time.Duration `json:"due_delay_p99_ns"`
	PeakPerSecond int           `json:"peak_fires_per_second"`
	// StoreBytesPerFire are the bytes the scheduler's Pebble stores wrote
	// in the measured window (WAL, flushes, compactions) divided by the
	// fires received (Config.StoreWrites; omitted without it). Flushes and
	// compactions of what registration wrote, when they fall in the
	// window, count too.
	StoreBytesPerFire *StoreBytes `json:"store_bytes_per_fire,omitempty"`
	// StoresHeld is what the samples of Config.StoresHeld saw (omitted
	// without it).
	StoresHeld *Held `json:"stores_held,omitempty"`
}

// Held is how many stores held their compactions back at most, by reason,
// and when the first and last samples that saw a flood's hold were taken
// (from the start of registration; omitted when none did). Samples are
// taken every 250 ms.
type Held struct {
	FloodMax    int            `json:"flood_max"`
	RecoveryMax int            `json:"recovery_max"`
	FloodFirst  *time.Duration `json:"flood_first_ns,omitempty"`
	FloodLast   *time.Duration `json:"flood_last_ns,omitempty"`
}

// StoreBytes are bytes per fire by cause.
type StoreBytes struct {
	WAL        float64 `json:"wal"`
	Flush      float64 `json:"flush"`
	Compaction float64 `json:"compaction"`
}

// Slice is the fire delay of the fires scheduled in one 10-second slice.
type Slice struct {
	Start time.Time     `json:"start"`
	Fires int           `json:"fires"`
	P99   time.Duration `json:"delay_p99_ns"`
	Max   time.Duration `json:"delay_max_ns"`
	// StartP99 is the slice's p99 of fired_at minus scheduled_at.
	StartP99 time.Duration `json:"start_p99_ns"`
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "bench: "+format+"\n", args...)
	}
}

// sleepUntil waits until t or ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}
