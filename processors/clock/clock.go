// Package clock is the clock group and the ticker every instance runs.
//
// Every instance sends its wall time to the single-partition chronos-clock
// topic; the group's one active owner keeps the last time it announced and,
// once time has advanced by the resolution, emits "advance to T" to every
// partition of chronos-shard-triggers. Ticks are idempotent (the maximum
// wins; a clock that jumps back announces nothing), and because time arrives
// as events a test or a replay can drive the whole system.
package clock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/inputs"
	"github.com/chronos-scheduler/chronos/topology"
)

// DefaultResolution is the default clock resolution.
const DefaultResolution = time.Second

// DefaultMaxAhead is the default bound on how far a tick may be ahead of
// the broker's time.
const DefaultMaxAhead = time.Second

// Config configures the clock group.
type Config struct {
	Layout topology.Layout
	// Resolution is the step of announced times (default 1s): T is the tick
	// time truncated to it. Smaller means lower fire delay and more
	// shard-trigger messages (Partitions per step).
	Resolution time.Duration
	// MaxAhead bounds how far ahead of the broker a tick may move time
	// (default 1s; negative: no bound, for replays and simulated clocks
	// that run ahead of real time). chronos-clock is created with
	// message.timestamp.type=LogAppendTime, so a record's timestamp is the
	// broker's clock when it appended the tick; a tick is announced as at
	// most that timestamp plus MaxAhead. One host with a fast clock
	// therefore cannot fire jobs early by more than MaxAhead, nor make
	// later fires count as missed. Larger values tolerate a broker clock
	// behind the instances' (fires are late by the broker's lag beyond
	// MaxAhead); smaller ones tighten how early a fast host can fire.
	MaxAhead time.Duration
	Logger   *slog.Logger
	// Inputs is the policy for ticks that cannot be applied (default:
	// rejects emitted through goka, see inputs.Policy).
	Inputs *inputs.Policy
}

// Clock is the clock group. Safe for concurrent use (stateless callbacks).
type Clock struct {
	cfg       Config
	shardKeys []string
	last      atomic.Int64 // unix nanos of the last time this instance announced
	// dropped is the latest tick time (bounded, truncated) this instance
	// dropped since its last announcement, unix nanos; ahead is the
	// announced time in its table minus dropped, nanos (0: announcing).
	dropped atomic.Int64
	ahead   atomic.Int64
	// announcedAt is the broker's time (unix nanos; 0: never) of the tick
	// this instance last announced: a tick dropped within AheadGrace of
	// it leaves Ahead at 0, so one pod with a slow clock, whose ticks the
	// owner drops between its peers' announcements, does not read as a
	// table ahead.
	announcedAt atomic.Int64
}

// New returns the clock group for cfg.
func New(cfg Config) (*Clock, error) {
	if cfg.Resolution == 0 {
		cfg.Resolution = DefaultResolution
	}
	if cfg.MaxAhead == 0 {
		cfg.MaxAhead = DefaultMaxAhead
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Inputs == nil {
		cfg.Inputs = &inputs.Policy{Rejects: cfg.Layout.Rejects(), Logger: cfg.Logger}
	}
	if err := ValidateResolution(cfg.Resolution); err != nil {
		return nil, err
	}
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	keys, err := topology.ShardKeys(cfg.Layout.Partitions)
	if err != nil {
		return nil, err
	}
	return &Clock{cfg: cfg, shardKeys: keys}, nil
}

// ValidateResolution accepts 10ms..1m.
func ValidateResolution(r time.Duration) error {
	if r < 10*time.Millisecond || r > time.Minute {
		return fmt.Errorf("clock: resolution %s, want 10ms..1m", r)
	}
	return nil
}

// Graph returns the clock group graph.
func (c *Clock) Graph() *goka.GroupGraph {
	n := c.cfg.Layout.Names
	return goka.DefineGroup(n.ClockGroup(),
		clients.Input(n.Clock(), c.onTick),
		goka.Persist(new(codec.Bytes)),
		goka.Output(n.ShardTriggers(), new(codec.Bytes)),
		goka.Output(n.Rejects(), new(codec.Bytes)),
	)
}

func (c *Clock) onTick(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	tick, err := codecs.DecodeTick(raw)
	if err != nil {
		c.cfg.Inputs.Reject(ctx, raw, err)
		return
	}
	t := Bound(tick.Time, ctx.Timestamp(), c.cfg.MaxAhead).Truncate(c.cfg.Resolution).UTC()
	if t.Before(tick.Time.Truncate(c.cfg.Resolution)) {
		c.cfg.Logger.Warn("clock tick ahead of the broker; announcing the broker's time instead",
			"instance", tick.Instance, "tick", tick.Time, "broker", ctx.Timestamp(), "max_ahead", c.cfg.MaxAhead)
	}
	last, _ := decodeTime(ctx.Value())
	if !t.After(last) {
		c.noteDropped(last, t, ctx.Timestamp())
		return
	}
	adv := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t})
	for _, k := range c.shardKeys {
		ctx.Emit(c.cfg.Layout.ShardTriggers(), k, adv)
	}
	ctx.SetValue(encodeTime(t))
	c.last.Store(t.UnixNano())
	c.dropped.Store(0)
	c.ahead.Store(0)
	c.announcedAt.Store(ctx.Timestamp().UnixNano())
}

// noteDropped records a tick at t, which the broker appended at broker,
// dropped because the table announced last: Ahead becomes last minus the
// latest tick dropped since the last announcement, once the broker's time
// is AheadGrace past that announcement (before, the clock is moving: a
// tick dropped then is a pod's clock behind its peers', adversary 19d).
// Ticks of one resolution step from several instances are dropped at 0; a
// table ahead of every tick reads how far.
func (c *Clock) noteDropped(last, t, broker time.Time) {
	if n := t.UnixNano(); n > c.dropped.Load() {
		c.dropped.Store(n)
	}
	// A broker time before the last announcement's: the broker's clock
	// stepped back, and its ticks cannot pass the table for as long as
	// the step (adversary 19e): not the grace.
	if at := c.announcedAt.Load(); at != 0 && broker.UnixNano() >= at && broker.UnixNano()-at < int64(AheadGrace(c.cfg.Resolution)) {
		c.ahead.Store(0)
		return
	}
	c.ahead.Store(last.UnixNano() - c.dropped.Load())
}

// Ahead returns how far the time in the clock table is ahead of the latest
// tick this instance dropped since its last announcement (0 while it
// announces, and on instances that do not own the clock partition). Every
// tick is dropped while the table holds a time ahead of them: after a run
// with a negative MaxAhead (a replay or a simulated clock ahead of real
// time), or when the broker's clock steps back (the chronos-clock leader
// moves to a broker whose clock is behind). Nothing is announced until the
// ticks pass that time: Ahead says how long that takes.
//
// While the broker's time is within AheadGrace of this instance's last
// announcement it reads 0: the clock is moving, and a tick dropped between
// two announcements (a pod whose clock is behind its peers') says nothing
// about the table (adversary 19d, TestSkewedPodDoesNotRaiseClockAhead).
func (c *Clock) Ahead() time.Duration { return time.Duration(c.ahead.Load()) }

// AheadGrace is how long (by the broker's clock) after its last
// announcement the clock owner reads Ahead as 0 at resolution res: three
// resolution steps, at least 10 s.
func AheadGrace(res time.Duration) time.Duration { return max(10*time.Second, 3*res) }

// Bound returns the time a tick may announce: its own time, but no later
// than the reference (the broker's append timestamp of its record) plus
// maxAhead (no bound when maxAhead is negative or the reference is unset).
// The clock owner's own wall clock is deliberately not a reference: a slow
// owner would hold every shard back.
func Bound(tick, ref time.Time, maxAhead time.Duration) time.Time {
	if maxAhead < 0 || ref.IsZero() || ref.Unix() <= 0 {
		return tick
	}
	if limit := ref.Add(maxAhead); tick.After(limit) {
		return limit
	}
	return tick
}

// LastAnnounced returns the last time this instance's clock group announced
// since it was last assigned the clock partition (zero if it has not, e.g.
// because another instance owns the clock; see StorageBuilder).
func (c *Clock) LastAnnounced() time.Time {
	n := c.last.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// StorageBuilder wraps b, the builder of the clock table, so that closing
// the table forgets the last announcement: goka closes a partition's table
// when the partition moves to another instance (and at every rebalance and
// stop), so LastAnnounced and chronos_clock_lag_seconds come only from the
// instance that owns the clock partition now, never from one that owned it
// before. Use it as the clock group's storage builder.
func (c *Clock) StorageBuilder(b storage.Builder) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		st, err := b(topic, partition)
		if err != nil {
			return nil, err
		}
		return &ownedTable{Storage: st, c: c}, nil
	}
}

// ownedTable is the clock table while this instance owns the partition.
type ownedTable struct {
	storage.Storage
	c *Clock
}

// Close forgets the last announcement before closing the table: goka has
// stopped the partition's callbacks by then, so none announces afterwards.
func (t *ownedTable) Close() error {
	t.c.last.Store(0)
	t.c.dropped.Store(0)
	t.c.ahead.Store(0)
	return t.Storage.Close()
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func decodeTime(v any) (time.Time, error) {
	b, _ := v.([]byte)
	if len(b) == 0 {
		return time.Time{}, nil
	}
	if len(b) != 8 {
		return time.Time{}, errors.New("clock: corrupt table value")
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC(), nil
}
