// Package history is the history group (chronos-history): it consumes
// chronos-dispatch, chronos-results and chronos-jobs and keeps, per job, the
// last fires (scheduled and dispatch time, delay, the executors' outcome)
// and the last commands (who changed the job, when, how) in its group
// table, for the read API and the CLI.
//
// It is off the fire path: the scheduler never waits for it, and it only
// reads what the scheduler and the executors have already written. A job's
// record is bounded: Fires fires and Changes commands, each entry cut to a
// fixed size (no payload is stored), see codecs.History.
//
// Each dispatch event, result and command is folded into the job's record
// in place (codecs.FoldFire, codecs.FoldChange): only the entry it changes
// is decoded, and a dispatch event is read only up to its payload
// (codecs.DispatchHead), which the history never needs. A command is read
// by codecs.DecodeCommand, which reads the form the API writes without the
// strict decoder's two passes, with the same validation.
//
// Input policy: a result or dispatch record that cannot be decoded, or
// whose key does not hash to the partition it arrived on, goes to
// chronos-rejects like every other input (processors/inputs). A command on
// chronos-jobs that does not decode is skipped silently: the scheduler
// group rejects it already, and one reject per bad record is enough.
package history

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Defaults of Config.
const (
	DefaultFires   = 50
	DefaultChanges = 20
	// MaxFires and MaxChanges bound the settings, so a record stays under
	// MaxFires*codecs.HistoryFireBytes + MaxChanges*codecs.HistoryChangeBytes
	// (about 1 MiB).
	MaxFires   = 1000
	MaxChanges = 200
)

// StoreOffsetEvery is how often the group's partition stores persist their
// changelog offset (store.Options.OffsetEvery) unless Config.Store sets
// it: every 1,000 offsets and at a clean stop, not once per record. A
// job's record is written whole and folding a fire, an outcome or a
// command again changes nothing, so the up to 999 more changelog records a
// crash makes the next recovery re-read are harmless.
const StoreOffsetEvery = 1000

// ActorHeader is the record header naming who sent a command (the API sets
// it to the token's name; the same as api.ActorHeader).
const ActorHeader = "chronos-actor"

// Config configures the history group.
type Config struct {
	Layout topology.Layout
	// DataDir is where each partition's Pebble store lives
	// (<DataDir>/<table topic>/<partition>).
	DataDir string
	// Store options for every partition store.
	Store store.Options
	// Fires is how many fires are kept per job (default 50), the latest by
	// scheduled time; Changes how many commands (default 20).
	Fires   int
	Changes int
	// Limits on commands (default codecs.DefaultLimits()).
	Limits codecs.Limits
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Inputs is the policy for records that cannot be applied (default:
	// rejects emitted through goka, see inputs.Policy).
	Inputs *inputs.Policy
	// Now is the group's clock, which bounds a result's scheduled_at
	// (codecs.CheckResultTime; default time.Now).
	Now func() time.Time
	// Writes, when set, counts the records the group's goka producer
	// writes (the instance wires clients.WriteAcks.All): a partition store
	// closes as settled only when none of them failed while it was open
	// and every one sent before its close has finished
	// (store.Options.Settled); any other end (a kill, a crash, a failed
	// changelog write) makes the next Open on this data dir discard the
	// store and restore the partition from its changelog. A fold consumed
	// again finds its fire or change already in a kept store and writes
	// nothing, so a store ahead of its changelog would keep that fold
	// from the changelog, and from any other owner, for good (adversary
	// round 48). nil: a kept store is trusted.
	Writes Writes
}

// Writes is what Config.Writes counts (clients.TopicWrites).
type Writes = clients.Writes

// settleWait bounds how long a partition store's close waits for the
// records sent before it (Config.Writes).
const settleWait = 10 * time.Second

func (c *Config) setDefaults() {
	if c.Fires == 0 {
		c.Fires = DefaultFires
	}
	if c.Changes == 0 {
		c.Changes = DefaultChanges
	}
	if c.Limits == (codecs.Limits{}) {
		c.Limits = codecs.DefaultLimits()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Inputs == nil {
		c.Inputs = &inputs.Policy{Rejects: c.Layout.Rejects(), Logger: c.Logger}
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	if err := c.Layout.Validate(); err != nil {
		return err
	}
	if c.Fires < 1 || c.Fires > MaxFires {
		return fmt.Errorf("history: fires %d, want 1..%d", c.Fires, MaxFires)
	}
	if c.Changes < 1 || c.Changes > MaxChanges {
		return fmt.Errorf("history: changes %d, want 1..%d", c.Changes, MaxChanges)
	}
	if c.DataDir == "" && c.Store.FS == nil {
		return fmt.Errorf("history: no data dir")
	}
	return nil
}

// History is the history group. Its callbacks run on goka's partition
// goroutines, each touching only its message's key; safe for concurrent use.
type History struct {
	cfg    Config
	stores store.Registry
}

// New returns the history group for cfg.
func New(cfg Config) (*History, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &History{cfg: cfg}, nil
}

// Group returns the group name.
func (h *History) Group() goka.Group { return h.cfg.Layout.HistoryGroup() }

// Graph returns the group graph: dispatch events, results and commands in,
// the per-job history persisted, rejects out.
func (h *History) Graph() *goka.GroupGraph {
	n := h.cfg.Layout.Names
	return goka.DefineGroup(n.HistoryGroup(),
		clients.Input(n.Dispatch(), h.onDispatch),
		clients.Input(n.Results(), h.onResult),
		clients.Input(n.Jobs(), h.onCommand),
		goka.Persist(new(codec.Bytes)),
		goka.Output(n.Rejects(), new(codec.Bytes)),
	)
}

// Options returns the processor options the group needs: its Pebble
// storage, and null values delivered to the callbacks (to reject them).
func (h *History) Options() []goka.ProcessorOption {
	return []goka.ProcessorOption{goka.WithStorageBuilder(h.StorageBuilder()), goka.WithNilHandling(goka.NilProcess)}
}

// StorageBuilder returns one Pebble store per partition (no index),
// persisting its offset every StoreOffsetEvery offsets by default.
func (h *History) StorageBuilder() storage.Builder {
	return h.stores.Builder(h.cfg.DataDir, func(partition int32) store.Options {
		opts := h.cfg.Store
		if opts.OffsetEvery == 0 {
			opts.OffsetEvery = StoreOffsetEvery
		}
		if opts.Logger == nil {
			log := h.cfg.Logger.With("partition", partition)
			opts.Logger = func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }
		}
		if w := h.cfg.Writes; w != nil {
			opts.Settled = clients.SettledSince(w, settleWait, "the history group")
			opts.OnDiscarded = func(dir string) {
				h.cfg.Logger.Warn("the history partition store was not closed settled (a crash, a kill, a failed changelog write): discarded (moved aside); restoring the partition from its changelog",
					"partition", partition, "dir", dir)
			}
		}
		return opts
	})
}

// fold applies one fold (codecs.FoldFire or FoldChange) to the message
// key's record and writes it back when it changed. An unreadable record
// (written by hand or by a bug) is logged and folded as empty, so it
// cannot stop the partition.
func (h *History) fold(ctx goka.Context, f func(rec []byte) ([]byte, bool, error)) {
	v, _ := ctx.Value().([]byte)
	out, changed, err := f(v)
	if err != nil {
		h.cfg.Logger.Error("unreadable history record; starting the job's history afresh", "job", ctx.Key(), "err", err)
		out, changed, err = f(nil)
	}
	if err == nil && changed {
		ctx.SetValue(out)
	}
}

// partitionErr is the reject reason of a record keyed for another partition.
func (h *History) partitionErr(ctx goka.Context) error {
	if want := topology.Partition(ctx.Key(), h.cfg.Layout.Partitions); want != ctx.Partition() {
		return &codecs.Error{Code: codecs.CodeWrongPartition, Field: "key", Reason: fmt.Sprintf(
			"job %q belongs on partition %d (FNV-1a partitioner, see docs/topics.md), the record arrived on partition %d",
			ctx.Key(), want, ctx.Partition())}
	}
	return nil
}

func (h *History) onResult(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	if err := codecs.CheckHeaders(ctx.Headers()); err != nil {
		h.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	if raw == nil {
		h.cfg.Inputs.Reject(ctx, nil, &codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value (tombstone) is not a result"})
		return
	}
	r, err := codecs.DecodeResult([]byte(ctx.Key()), raw)
	if err == nil {
		err = codecs.CheckResultTime(r, h.cfg.Now())
	}
	if err == nil {
		err = h.partitionErr(ctx)
	}
	if err != nil {
		h.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	h.fold(ctx, func(rec []byte) ([]byte, bool, error) {
		return foldResult(rec, r, h.cfg.Fires)
	})
}

func (h *History) onDispatch(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	d, suffix, err := decodeDispatch(ctx.Key(), raw)
	if err == nil {
		err = h.partitionErr(ctx)
	}
	if err != nil {
		h.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	h.fold(ctx, func(rec []byte) ([]byte, bool, error) {
		return foldDispatch(rec, suffix, d, h.cfg.Fires)
	})
}

// decodeDispatch decodes a dispatch event keyed key, all but its payload
// (see codecs.DispatchHead), and returns its fire_id suffix.
func decodeDispatch(key string, raw []byte) (codecs.Dispatch, string, error) {
	if raw == nil {
		return codecs.Dispatch{}, "", &codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value (tombstone) is not a dispatch event"}
	}
	// A job id is at most MaxIDLen bytes (legacy ids too): a longer key is
	// no job's, and its record could outgrow --batch-bytes, which the
	// settings bound with this length (adversary round 49: a 140 kB key's
	// record failed its changelog write on every try).
	if len(key) == 0 || len(key) > codecs.MaxIDLen {
		return codecs.Dispatch{}, "", &codecs.Error{Code: codecs.CodeInvalidID, Field: "job_id", Reason: fmt.Sprintf("a dispatch event's key must be a job id of 1 to %d bytes, got %d bytes", codecs.MaxIDLen, len(key))}
	}
	d, ok := codecs.DispatchHead(raw)
	if !ok {
		var err error
		if d, err = codecs.DecodeDispatch(raw); err != nil {
			return d, "", err
		}
		d.Payload = nil
	}
	job, _, _, ok := codecs.ParseFireID(d.FireID)
	if !ok || job != key || d.JobID != key {
		return d, "", &codecs.Error{Code: codecs.CodeInvalidField, Field: "fire_id", Reason: "a dispatch event's fire_id and job_id must name its key"}
	}
	if codecs.CheckRecordTime(d.ScheduledAt) != nil || codecs.CheckRecordTime(d.FiredAt) != nil {
		return d, "", &codecs.Error{Code: codecs.CodeInvalidField, Field: "scheduled_at", Reason: "a dispatch event needs scheduled_at and fired_at from 1970 to 9999"}
	}
	suffix := d.FireID[len(key)+1:]
	if err := codecs.CheckHistoryDispatch(suffix, d.Trigger, d.Bucket); err != nil {
		return d, "", err
	}
	if err := codecs.CheckDispatchTime(d); err != nil {
		return d, "", err
	}
	return d, suffix, nil
}

func (h *History) onCommand(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	if raw == nil {
		return
	}
	cmd, err := codecs.DecodeCommand([]byte(ctx.Key()), raw, h.cfg.Limits)
	if err != nil || codecs.CheckHeaders(ctx.Headers()) != nil || h.partitionErr(ctx) != nil || codecs.CheckRecordTime(ctx.Timestamp()) != nil {
		return // the scheduler group rejects it
	}
	c := boundChange(codecs.Change{Offset: ctx.Offset(), At: ctx.Timestamp().UTC(), Op: cmd.Op, Actor: string(ctx.Headers()[ActorHeader]), Detail: detail(cmd)})
	h.fold(ctx, func(rec []byte) ([]byte, bool, error) { return codecs.FoldChange(rec, c, h.cfg.Changes) })
}

// detail summarizes a command for the history: a put's schedule and
// bucket, a fire's trigger id.
func detail(c codecs.Command) string {
	switch c.Op {
	case codecs.OpPut:
		s := c.Job.Spec
		var out string
		switch {
		case s.Cron != "":
			out = "cron " + s.Cron
		case s.Every != 0:
			out = "every " + s.Every.String()
		default:
			out = "at " + s.At.UTC().Format(time.RFC3339)
		}
		if s.TZ != "" {
			out += " tz " + s.TZ
		}
		if len(s.Also) > 0 {
			out += fmt.Sprintf(" +%d schedules", len(s.Also))
		}
		if n := len(s.Exclude.Dates) + len(s.Exclude.Ranges); n > 0 {
			out += fmt.Sprintf(" excluding %d", n)
		}
		if len(s.Exclude.Calendars) > 0 {
			out += " excluding calendars " + strings.Join(s.Exclude.Calendars, ",")
		}
		if c.Job.Bucket != "" {
			out += " bucket " + c.Job.Bucket
		}
		return out
	case codecs.OpFire:
		return c.TriggerID
	case codecs.OpBackfill:
		return "from " + c.From.Format(time.RFC3339Nano) + " to " + c.To.Format(time.RFC3339Nano)
	}
	return ""
}
