package store

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// compactionGate is the Pebble compaction scheduler of a store opened with
// a RecoveryL0CompactionThreshold. It holds while the store recovers from
// an empty directory, and while the store takes a flood of new keys with
// little else to do (a registration: floodMeter). While it holds, it lets
// compactions run only once level 0 is as deep as Pebble would have let
// it grow under that threshold (it picks a level-0 compaction at
// 2×sublevels/threshold ≥ 1). Released (MarkRecovered) and with no
// flood, it schedules like Pebble's default scheduler: as many
// compactions as the DB allows. So the recovery compacts out of level 0
// less often, as a DB opened with that threshold does, and the store
// keeps Pebble's own threshold afterwards without closing and reopening
// the DB (the reopen paused the partition: it waited for running
// compactions and replayed the WAL).
//
// The DB's write stall (L0StopWritesThreshold, opened at four times the
// threshold) is deeper than the gate, so a stalled DB always finds it
// open: a held gate never stops writes for good.
type compactionGate struct {
	// threshold: while holding, compactions wait until level 0 has
	// threshold/2 sublevels or more (2×sublevels ≥ threshold), or
	// l0CompactionFileThreshold files (deep).
	threshold int
	// tick is how often a waiting compaction is reconsidered.
	tick time.Duration

	db pebble.DBForCompaction
	// level0 reads level 0's sublevels and files; set by Register (the
	// DB's Metrics).
	level0 func() (sublevels int, files int64)

	// meter counts the store's new keys and other work; nil: no flood
	// hold.
	meter *floodMeter
	// minTableBytes: a flood holds only once the store's tables are this
	// large (0: at any size); tables reads their size (the DB's Metrics),
	// set by Register.
	minTableBytes int64
	tables        func() int64

	mu         sync.Mutex
	holding    bool // recovering from an empty directory
	flooding   bool // the window is a flood of new keys
	window     [floodTicks]floodSample
	wi         int
	last       floodSample
	large      bool // the tables reached minTableBytes
	sizeWait   int  // ticks until the tables' size is read again
	measured   int  // ticks measured (the tests count in ticks, not time)
	running    int
	granting   bool
	grantDone  *sync.Cond
	registered bool
	gone       bool // unregistered: never call the DB again
	stop       chan struct{}
	stopped    chan struct{}
	poke       chan struct{}
}

var _ pebble.CompactionScheduler = (*compactionGate)(nil)

func newCompactionGate(threshold int, recovering bool, meter *floodMeter) *compactionGate {
	g := &compactionGate{
		threshold: threshold,
		tick:      100 * time.Millisecond,
		meter:     meter,
		holding:   recovering,
		stop:      make(chan struct{}),
		stopped:   make(chan struct{}),
		poke:      make(chan struct{}, 1),
	}
	g.grantDone = sync.NewCond(&g.mu)
	return g
}

// Register implements pebble.CompactionScheduler: called once when the DB
// opens.
func (g *compactionGate) Register(_ int, db pebble.DBForCompaction) {
	g.mu.Lock()
	g.db = db
	if d, ok := db.(*pebble.DB); ok {
		g.level0 = func() (int, int64) {
			l := d.Metrics().Levels[0]
			return int(l.Sublevels), l.TablesCount
		}
		g.tables = func() int64 {
			var n int64
			for _, l := range d.Metrics().Levels {
				n += l.TablesSize
			}
			return n
		}
	} else {
		g.level0 = func() (int, int64) { return g.threshold, 0 } // never holds back
		g.tables = func() int64 { return 0 }                     // never large
	}
	g.registered = true
	g.mu.Unlock()
	go g.loop()
}

// Unregister implements pebble.CompactionScheduler: called once by the
// DB's Close; after it returns the gate never calls the DB.
func (g *compactionGate) Unregister() {
	g.mu.Lock()
	registered := g.registered
	g.mu.Unlock()
	if registered {
		close(g.stop)
		<-g.stopped
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone = true
	for g.granting {
		g.grantDone.Wait()
	}
}

// TrySchedule implements pebble.CompactionScheduler. The DB calls it with
// its mutex held, so it may not read the DB's metrics: a held gate refuses,
// and the DB keeps the compaction waiting until the gate grants it.
func (g *compactionGate) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone || g.holding || g.flooding {
		return false, nil
	}
	if g.db.GetAllowedWithoutPermission() > g.running {
		g.running++
		return true, g
	}
	return false, nil
}

// UpdateGetAllowedWithoutPermission implements pebble.CompactionScheduler.
func (g *compactionGate) UpdateGetAllowedWithoutPermission() { g.wake() }

// Started, MeasureCPU and CumulativeStats implement
// pebble.CompactionGrantHandle: no pacing.
func (g *compactionGate) Started()                                          {}
func (g *compactionGate) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (g *compactionGate) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done implements pebble.CompactionGrantHandle: a compaction ended.
func (g *compactionGate) Done() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.grant()
}

// deep: level 0 needs a compaction under the gate's threshold, by
// Pebble's rule for a threshold (its L0 score: 2×sublevels/threshold, or
// files/L0CompactionFileThreshold when larger, at least 1). Files count
// when keys come in order: flushed files that do not overlap stay one
// sublevel (adversary round 60: ascending keys kept every flush in level
// 0 until the recovery ended).
func (g *compactionGate) deep(sublevels int, files int64) bool {
	return 2*sublevels >= g.threshold || files >= l0CompactionFileThreshold
}

// l0CompactionFileThreshold is Pebble's default L0CompactionFileThreshold
// (the store does not set it).
const l0CompactionFileThreshold = 500

// abandon stops a gate whose DB failed to open: Pebble registers the
// scheduler before its Open can still fail, and never unregisters it
// then (adversary round 60: each failed Open left a loop polling the
// half-opened DB).
func (g *compactionGate) abandon() {
	g.mu.Lock()
	registered := g.registered && !g.gone
	g.mu.Unlock()
	if registered {
		g.Unregister()
	}
}

// release opens the gate for good (the recovery is done) and grants what
// waits; it reports whether the gate held until then.
func (g *compactionGate) release() bool {
	g.mu.Lock()
	was := g.holding
	g.holding = false
	g.mu.Unlock()
	g.wake()
	return was
}

// held reports whether the gate still holds compactions back for the
// recovery (a flood's hold is flooded).
func (g *compactionGate) held() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding
}

func (g *compactionGate) wake() {
	select {
	case g.poke <- struct{}{}:
	default:
	}
}

func (g *compactionGate) loop() {
	defer close(g.stopped)
	t := time.NewTicker(g.tick)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.measure()
		case <-g.poke:
		}
		g.grant()
	}
}

// grant lets waiting compactions run, up to what the DB allows, unless the
// gate holds and level 0 is not yet deep enough. Called without the DB's
// locks (the loop, Done).
func (g *compactionGate) grant() {
	g.mu.Lock()
	for g.granting {
		g.grantDone.Wait()
	}
	if g.gone {
		g.mu.Unlock()
		return
	}
	allowed := g.db.GetAllowedWithoutPermission() - g.running
	holding, level0 := g.holding || g.flooding, g.level0
	if allowed <= 0 {
		g.mu.Unlock()
		return
	}
	g.granting = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.granting = false
		g.grantDone.Broadcast()
		g.mu.Unlock()
	}()
	for first := true; allowed > 0; allowed-- {
		if waiting, _ := g.db.GetWaitingCompaction(); !waiting {
			return
		}
		// Level 0 is read only when a compaction waits (the DB's
		// metrics take its mutex and copy every level's).
		if first && holding && !g.deep(level0()) {
			return
		}
		first = false
		if !g.db.Schedule(g) {
			return
		}
		g.mu.Lock()
		g.running++
		g.mu.Unlock()
	}
}

// flooded reports whether the gate holds compactions back for a flood of
// new keys.
func (g *compactionGate) flooded() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.flooding
}

// A flood: over the last floodTicks ticks (five seconds), at least
// floodMinKeys new keys and at most one unit of other work for every
// floodShare of them; and over the last second at most floodMaxOther
// units of other work. A registration of new job ids is one: each Set
// writes a key the key filter knew to be new, and its level 0 fills with
// flushes of keys in no order, so each compaction out of level 0 rewrites
// most of the level below; held, level 0 grows as under the threshold and
// each compaction carries more of it (10,000,000 daily jobs registered at
// 17,204 jobs/s and 960 CPU s held throughout, against 14,049 and 1,124
// at Pebble's threshold, 2026-12-07, docs/performance.md). A store takes
// a registration in bursts, as its partition's records are fetched, with
// seconds of nothing between them: judged by one second, most stores
// compacted in every gap (12,910 jobs/s and 1,231 CPU s), so the flood
// lasts until five seconds pass without enough new keys. Fires, updates,
// deletes and reads are the other work: a store doing more than a few
// of them in a second (~20 fires: a fire is a due entry scanned, a record
// read and a move) compacts at Pebble's threshold from the next tick, so
// its reads merge no deeper level 0 than Pebble's (adversary round 66: a
// store registering 10k new ids a second while it fired 300 jobs a second
// read through 21 sublevels against 10 when the rule was the share
// alone). The few reads a flood lets through merge up to the threshold's
// depth.
//
// The hold starts only once the store's tables hold floodMinTableBytes:
// what a held level 0 saves grows with the level below it, and a small
// store's compactions are cheap. Held from the first key, a registration
// of 1,000,000 jobs (~6 MiB a scheduler store) left the burst that
// followed it to compact 79-88 bytes a fire against 70.3-70.5 without the
// hold, in every run (2026-12-07; its drain moved with the machine more
// than with the build: docs/performance.md). From 4 MiB the burst
// compacted 70.4-70.5 (2 runs), and 10M registered at a median of 21,636
// jobs/s against 19,766 from 16 MiB (3 runs each on Apache Kafka, ahead
// in 2 of 3 pairs; 748 against 822 CPU s).
const (
	floodMinTableBytes = 4 << 20
	floodTicks         = 50
	floodRecent        = 10 // the ticks of the last second
	floodMinKeys       = 100
	floodShare         = 8
	floodMaxOther      = 64
)

type floodSample struct{ fresh, other uint64 }

// floodMeter counts a store's writes of new keys (fresh) and its other
// work: Sets of keys it has, Deletes, reads that reach the DB, due-index
// entries scanned and moved. Safe for concurrent use.
type floodMeter struct{ fresh, other atomic.Uint64 }

// addOther counts n units of other work; a nil meter counts nothing.
func (m *floodMeter) addOther(n int) {
	if m != nil && n > 0 {
		m.other.Add(uint64(n))
	}
}

// addSet counts a Set of a new key (fresh) or of a key the store may have.
func (m *floodMeter) addSet(fresh bool) {
	switch {
	case m == nil:
	case fresh:
		m.fresh.Add(1)
	default:
		m.other.Add(1)
	}
}

// measure takes the meter's counts since the last tick into the window and
// decides whether the store is in a flood (the loop grants right after it,
// so a flood's end lets what waits run). While the counts make a flood and
// the store is not yet large, its tables' size is read once a second
// (outside the gate's mutex: the DB's Metrics take the DB's, which
// TrySchedule is called under); once large, it stays so until the flood
// ends, and the next flood reads the size again (a store that shrank,
// by deletes and compactions, is small again: adversary round 67).
func (g *compactionGate) measure() {
	if g.meter == nil {
		return
	}
	now := floodSample{g.meter.fresh.Load(), g.meter.other.Load()}
	g.mu.Lock()
	g.measured++
	g.window[g.wi] = floodSample{now.fresh - g.last.fresh, now.other - g.last.other}
	g.last = now
	g.wi = (g.wi + 1) % floodTicks
	var sum, recent floodSample
	for i := range floodTicks {
		w := g.window[(g.wi+floodTicks-1-i)%floodTicks] // the newest first
		sum.fresh += w.fresh
		sum.other += w.other
		if i < floodRecent {
			recent.other += w.other
		}
	}
	flood := isFlood(sum, recent)
	switch {
	case g.minTableBytes <= 0:
		g.large = true
	case !flood:
		g.large = false // read again at the next flood: tables shrink too
	}
	readSize := flood && !g.large && g.tables != nil && g.sizeWait <= 0
	if g.sizeWait > 0 {
		g.sizeWait--
	}
	if !readSize {
		g.flooding = flood && g.large
		g.mu.Unlock()
		return
	}
	g.sizeWait = floodRecent - 1
	g.mu.Unlock()
	large := g.tables() >= g.minTableBytes
	g.mu.Lock()
	g.large = g.large || large
	g.flooding = flood && g.large
	g.mu.Unlock()
}

// isFlood is the rule above for the window's counts and the last second's.
func isFlood(window, second floodSample) bool {
	return window.fresh >= floodMinKeys && window.other*floodShare <= window.fresh && second.other <= floodMaxOther
}

// Held is how many of the process's open stores hold their compactions
// back, by reason: a recovery from an empty directory, or a flood of new
// keys.
type Held struct{ Recovery, Flood int }

// OpenHeld counts the open stores whose compaction gate holds. Safe for
// concurrent use.
func OpenHeld() Held {
	var h Held
	openStores.Range(func(k, _ any) bool {
		s := k.(*Store)
		s.mu.RLock()
		g := s.gate
		s.mu.RUnlock()
		if g == nil {
			return true
		}
		g.mu.Lock()
		if g.holding {
			h.Recovery++
		} else if g.flooding {
			h.Flood++
		}
		g.mu.Unlock()
		return true
	})
	return h
}
