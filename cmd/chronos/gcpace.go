package main

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"github.com/chronos-scheduler/chronos/store"
)

// gcPaceEvery is how often the pacer sets GOGC again: the stores' memory
// grows over seconds to minutes (memtables, caches filling), not between
// two collections.
const gcPaceEvery = time.Second

// gcPaceMinPercent is the lowest GOGC the pacer sets: a heap that is nearly
// all store memory still gets 10% of headroom, so the collector does not
// run back to back.
const gcPaceMinPercent = 10

// gcPaceDefaultPercent is the pacer's headroom when the environment sets
// no GOGC and the process has no embedded broker: the heap besides the
// stores may grow by half of what is live, not by all of it as at Go's
// default of 100. On Apache Kafka, 1,000,000 jobs due at once drained in a
// median of 7.15 s at 50 against 7.08 s at 100 (3 runs each, alternating),
// the bench process peaking at 944 MiB against 1,202 MiB; registering
// 3,000,000 jobs, `chronos run` peaked at a median of 732 MiB against
// 822 MiB, for ~10% more CPU (docs/performance.md, 2026-12-07). GOGC=100
// gives Go's headroom back.
const gcPaceDefaultPercent = 50

// paceBase returns the percent the pacer gives the heap besides the
// stores: the GOGC the process runs with (found), or gcPaceDefaultPercent
// when the environment sets no GOGC, nothing in the process changed it from
// Go's default, and no embedded broker shares the heap. The embedded
// broker (chronos dev, chronos bench without --brokers) keeps its whole
// log on the heap, long-lived like the stores' memory but not counted by
// the pacer: at 50 every collection marks it twice as often, and the 1M
// burst on it drained 13% slower (median 8.10 s against 7.18 s) on 10%
// more CPU.
func paceBase(found int, envSet, embeddedBroker bool) int {
	if !envSet && !embeddedBroker && found == 100 {
		return gcPaceDefaultPercent
	}
	return found
}

// gcPercent returns the GOGC that gives a heap goal of live plus base
// percent of what is live besides held, the long-lived memory of the
// stores: Go's goal is live × (1 + GOGC/100), so GOGC = base × (live −
// held) / live, at least gcPaceMinPercent and at most base. With nothing
// held it is base.
func gcPercent(base int, live, held uint64) int {
	if held == 0 || live == 0 {
		return base
	}
	if held >= live {
		return min(base, gcPaceMinPercent)
	}
	// In floating point: base × (live − held) overflows 64 bits for a GOGC
	// of millions and a heap of gigabytes (adversary round 63).
	p := int(float64(base) * (float64(live-held) / float64(live)))
	return min(base, max(p, gcPaceMinPercent))
}

// gcPacer sets GOGC from the live heap and the bytes the stores hold on it.
type gcPacer struct {
	base    int           // the percent of the heap besides the stores (paceBase)
	restore int           // the GOGC the process started with, set back at the end
	held    func() uint64 // bytes of long-lived store memory on the heap
	live    func() uint64 // the live heap after the last collection
	set     func(int) int // debug.SetGCPercent
	percent int           // the GOGC set last
}

// run sets GOGC every gcPaceEvery until ctx ends, then gives the process
// the GOGC it started with back.
func (p *gcPacer) run(ctx context.Context) {
	t := time.NewTicker(gcPaceEvery)
	defer t.Stop()
	defer p.set(p.restore)
	for {
		p.pace()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pace sets GOGC once.
func (p *gcPacer) pace() {
	if g := gcPercent(p.base, p.live(), p.held()); g != p.percent {
		p.set(g)
		p.percent = g
	}
}

// paceGC starts the process's pacer when it should pace (shouldPace), or
// joins the one already running, and returns a function that leaves it:
// the last to leave, by that function or by its ctx ending, stops it and
// waits for it. The function may be called more than once.
//
// Why: Pebble's memtables and block caches are long-lived, and Go's
// collector lets the heap grow by GOGC percent of everything live, them
// included, before it collects. With ~450 MiB of them (3,000,000 jobs
// registered on Apache Kafka) the heap's goal was ~1.1 GiB and the process
// peaked at 1,223-1,247 MiB; paced, at 802-862 MiB (docs/performance.md).
// Built with cgo, where Pebble's memory is outside Go's heap, the collector
// already counts only the rest. The price is more collections: GOGC
// percent of the heap besides the stores is less headroom than GOGC
// percent of all of it. Without GOGC in the environment the percent is
// gcPaceDefaultPercent (50), or 100 with embeddedBroker (paceBase).
func paceGC(ctx context.Context, log *slog.Logger, embeddedBroker bool) (stop func()) {
	pacing.Lock()
	defer pacing.Unlock()
	if pacing.users == 0 {
		found := debug.SetGCPercent(100)
		debug.SetGCPercent(found)
		if !shouldPace(store.MemoryOnGoHeap, found, debug.SetMemoryLimit(-1)) {
			return func() {}
		}
		env := os.Getenv("GOGC")
		envSet := env != "" // empty is unset, as the runtime reads it
		base := paceBase(found, envSet, embeddedBroker)
		if msg := gogcTypo(env); msg != "" && log != nil {
			log.Warn(msg, "GOGC", env, "gogc", found)
		}
		p := &gcPacer{base: base, restore: found, percent: found, set: debug.SetGCPercent, live: liveHeap, held: func() uint64 {
			m := store.OpenMemory()
			return m.MemTables + m.BlockCache
		}}
		if log != nil {
			log.Info("no memory limit: GOGC paced so that the collector's headroom counts the heap besides the stores' memtables and block caches", "gogc", base, "gogc_set", envSet)
		}
		pctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); p.run(pctx) }()
		pacing.stop = func() { cancel(); <-done }
	}
	pacing.users++
	var once sync.Once
	release := func() {
		once.Do(func() {
			pacing.Lock()
			defer pacing.Unlock()
			if pacing.users--; pacing.users == 0 {
				pacing.stop()
			}
		})
	}
	unregister := context.AfterFunc(ctx, release)
	return func() { unregister(); release() }
}

// pacing is the process's one pacer, shared by the paceGC calls whose stop
// has not been called and whose context has not ended (users): the first
// starts it with the GOGC it finds, the last stops it, which sets that GOGC
// back. A second pacer of its own would take the first one's paced GOGC
// for its base and leave it set (adversary round 63: two benches in one
// process left GOGC at 52).
var pacing struct {
	sync.Mutex
	users int
	stop  func()
}

// shouldPace reports whether the process paces its collector: only when the
// stores' memory is on Go's heap (a binary built without cgo, as the shipped
// image is), the collector is on (GOGC is not off), and there is no memory
// limit (GOMEMLIMIT, or the one autoMemoryLimit takes from the cgroup).
// Under a limit Go already collects harder as the heap nears it, and lets
// the heap use the memory below it with fewer collections.
func shouldPace(onHeap bool, gogc int, memLimit int64) bool {
	return onHeap && gogc >= 0 && memLimit == math.MaxInt64
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gogcTypo returns a warning for a GOGC the runtime could not read as a
// percent ("abc", "50%"): Go then runs at 100, as if it were unset, but the
// pacer takes a set GOGC as the operator's choice, so the typo would
// silently give up the pacer's default of 50. Empty when GOGC is unset,
// "off" or a number.
func gogcTypo(env string) string {
	if env == "" || env == "off" {
		return ""
	}
	if _, err := strconv.ParseInt(env, 10, 32); err == nil && env[0] != '+' { // the runtime reads no '+'
		return ""
	}
	return "GOGC is neither a number nor off: Go's runtime reads it as 100, and the pacer takes that as the percent set; unset GOGC for the pacer's default"
}
