package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lovoo/goka"
)

// A frozen owner (SIGSTOP, a paused VM, a host stalled for seconds) stops
// heartbeating; after the group's session timeout its partitions move to
// another instance, which restores them from the changelog and goes on. When
// the frozen process resumes it does not know yet: it finishes the callback
// it was in and processes the messages it had buffered, and each table write
// it makes lands in the changelog after the new owner's, overwriting newer
// state for whoever restores the partition next (a deleted job put back, an
// update undone). Kafka would fence such a writer with transactions; goka
// does not use them. The fence does it here: a process-wide watchdog counts
// freezes longer than freezeLimit, and a partition session (one goka
// partition-processor run, one context) that began before the latest freeze
// may not write any more: its callback fails before the write, its input is
// not committed, and the processor restarts and rejoins, restoring what the
// other owner wrote. A freeze shorter than the limit keeps the session: the
// broker cannot have moved the partition yet.

// freezeLimit is the longest stop that cannot have cost the partitions:
// sarama's group session times out 10 s after the last heartbeat, sent every
// 3 s, so only a stop of more than 7 s can; 5 s leaves a margin (a 5-7 s
// stop restarts the processor without need, which is safe).
const freezeLimit = 5 * time.Second

// freezeTick is how often the watchdog looks at the clock.
const freezeTick = 250 * time.Millisecond

// errFrozen fails a callback of a session that began before a freeze.
var errFrozen = errors.New("scheduler: the process was stopped for longer than the group session allows; its partitions may have moved, so this session writes nothing more and the processor restarts")

// freezes returns the process-wide watchdog (freezes are the process's, not
// a partition's), started by the first scheduler: the CLI's other commands
// import this package and need no ticking goroutine.
var freezes = sync.OnceValue(func() *watchdog { return newWatchdog(freezeLimit, freezeTick) })

// watchdog counts the times the process was stopped for longer than limit.
// Safe for concurrent use.
type watchdog struct {
	limit time.Duration
	start time.Time // monotonic reference
	// since returns the time since start (nil: the monotonic clock; tests
	// set a fake).
	since func() time.Duration

	mu    sync.Mutex
	last  time.Duration // since start, at the last look
	epoch uint64        // freezes seen
}

func newWatchdog(limit, tick time.Duration) *watchdog {
	w := &watchdog{limit: limit, start: time.Now()}
	go func() {
		for range time.Tick(tick) {
			w.epoch1()
		}
	}()
	return w
}

// epoch1 looks at the clock and returns the number of freezes seen, this
// look included: a gap longer than the limit since the last look (the
// watchdog's or a callback's) is a freeze. Whichever goroutine runs first
// after a stop sees the gap.
func (w *watchdog) epoch1() uint64 {
	var now time.Duration
	if w.since != nil {
		now = w.since()
	} else {
		now = time.Since(w.start)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if gap := now - w.last; gap > w.limit {
		w.epoch++
		slog.Warn("the process was stopped (or not scheduled) for longer than the freeze limit: partition sessions that began before now write nothing more, and their processors restart", "stopped_for", gap.Round(time.Millisecond), "limit", w.limit)
	}
	if now > w.last {
		w.last = now
	}
	return w.epoch
}

// fence remembers, per partition session, the freeze epoch it began in.
// Safe for concurrent use.
type fence struct {
	w        *watchdog
	sessions sync.Map      // context.Context -> uint64
	linger   time.Duration // 0: sessionLinger (tests shorten it)
}

// sessionLinger is how long the fence remembers a session after goka
// cancelled its context: a callback of it still running (a fan-out chunk
// in flight at a revocation, or a process resumed from a freeze) is judged
// by the epoch its session began in. goka waits at most 60 s for a
// partition's callbacks when it stops, and a chunk's fires are bounded by
// the client's 2-minute delivery timeout.
const sessionLinger = 5 * time.Minute

// errSessionOver fails a callback whose session the fence does not know
// and whose context goka has already cancelled: when it began, and so
// whether a freeze came since, cannot be told.
var errSessionOver = errors.New("scheduler: a table write for a partition session that has ended; it writes nothing and its input is left to the next owner")

// check returns errFrozen if the process was frozen since the session of
// ctx began, and errSessionOver for a session first seen after goka
// cancelled it. A session is remembered until sessionLinger after its
// cancellation (adversary round 37: it was forgotten at once, so a frozen
// owner resumed after the rebalance passed the check as a new session).
func (f *fence) check(ctx goka.Context) error {
	e := f.w.epoch1()
	c := ctx.Context()
	began, loaded := f.sessions.LoadOrStore(c, e)
	if !loaded {
		if c.Err() != nil {
			f.sessions.Delete(c)
			return errSessionOver
		}
		linger := f.linger
		if linger == 0 {
			linger = sessionLinger
		}
		context.AfterFunc(c, func() { time.AfterFunc(linger, func() { f.sessions.Delete(c) }) })
	}
	if began.(uint64) != e {
		return errFrozen
	}
	return nil
}

// guard fails the callback (uncommitted, the processor restarts) if its
// session is fenced. Called at the start of every callback and before every
// table write, so a freeze in the middle of a callback is caught too. It
// stops the callback itself: once goka has cancelled the session's context
// ctx.Fail only records the error and returns (adversary round 37: the
// write was then made anyway).
func (s *Scheduler) guard(ctx goka.Context) {
	if err := s.fence.check(ctx); err != nil {
		failed(ctx, err)
		panic(err)
	}
}

// setValue writes the current key's table value, after the fence.
func (s *Scheduler) setValue(ctx goka.Context, v []byte) {
	s.guard(ctx)
	ctx.SetValue(v)
}

// deleteValue deletes the current key's table value, after the fence.
func (s *Scheduler) deleteValue(ctx goka.Context) {
	s.guard(ctx)
	ctx.Delete()
}
