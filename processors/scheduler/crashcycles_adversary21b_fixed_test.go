package scheduler

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

var (
	adv21bSeeds = flag.Int("adv21b.seeds", 300, "adversary 21b: seeds of the crash-cycle property")
	adv21bFirst = flag.Uint64("adv21b.first", 1, "adversary 21b: first seed")
	adv21bOps   = flag.Int("adv21b.ops", 60, "adversary 21b: operations per seed")
	adv21bDebug = flag.Bool("adv21b.debug", false, "adversary 21b: log the crash run's steps")
)

// rebuildCounter counts "rebuilt due index" log lines.
type rebuildCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (r rebuildCounter) Handle(ctx context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, "rebuilt due index") {
		r.n.Add(1)
	}
	return nil
}
func (r rebuildCounter) Enabled(context.Context, slog.Level) bool { return true }
func (r rebuildCounter) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r rebuildCounter) WithGroup(string) slog.Handler            { return r }

// cycOwner is one incarnation of the partition's owner: a scheduler, its
// store on fs.
type cycOwner struct {
	s  *Scheduler
	st *store.Store
	fs vfs.FS
	cf *vfs.MemFS // crashable, nil for the control
}

func adv21bOpen(t *testing.T, fs vfs.FS, prod Producer, now *time.Time, chunk int, budget time.Duration, rebuilds *atomic.Int64, offsetEvery int64) (*Scheduler, *store.Store) {
	t.Helper()
	s, err := New(Config{
		Layout:      topology.Layout{Names: topology.Names{Prefix: "p1."}, Partitions: 1, Replication: 1},
		DataDir:     "/data",
		Logger:      slog.New(rebuildCounter{n: rebuilds}),
		Store:       store.Options{FS: fs, DeferIndexOnRecovery: true, RecoveryL0CompactionThreshold: 16, OffsetEvery: offsetEvery},
		Producer:    prod,
		Now:         func() time.Time { return *now },
		ChunkSize:   chunk,
		ChunkBudget: budget,
	})
	require.NoError(t, err)
	gst, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
	require.NoError(t, err)
	require.NoError(t, gst.Open())
	t.Cleanup(func() { _ = gst.Close() })
	return s, s.Store(0)
}

// cycRun is one run of a history: the same inputs in the same order, with
// (crashes) or without crashes between callbacks. A crash keeps what the
// store synced (its WAL up to the last Sync: pebble writes without sync),
// and everything Kafka has: the changelog, the loopbacks queued, the
// dispatches sent. The restarted owner opens the kept store, replays the
// changelog after its stored offset (goka's recovery), and goes on.
type cycRun struct {
	t        *testing.T
	rng      *rand.Rand
	rng2     *rand.Rand
	crashes  bool
	chunk    int
	budget   time.Duration
	offEvery int64
	now      time.Time
	prod     *recordingProducer
	h        *clogHarness
	own      cycOwner
	rebuilds atomic.Int64
	acked    int // changelog records acked to the store (SetOffset)
	ncrash   int
	steady   int64 // rebuilds counted since the last crash
}

func (r *cycRun) open(fs vfs.FS, cf *vfs.MemFS) {
	s, st := adv21bOpen(r.t, fs, r.prod, &r.now, r.chunk, r.budget, &r.rebuilds, r.offEvery)
	r.own = cycOwner{s: s, st: st, fs: fs, cf: cf}
	if r.h == nil {
		r.h = &clogHarness{partitionHarness: &partitionHarness{t: r.t, s: s, st: st, prod: r.prod, now: r.now, chunk: r.chunk, budget: r.budget}}
	} else {
		r.h.s, r.h.st = s, st
	}
	off, _ := st.GetOffset(-1)
	u0, _ := st.IndexedUpTo()
	adv21Replay(r.t, st, r.h.clog, len(r.h.clog))
	require.NoError(r.t, st.MarkRecovered())
	r.acked = len(r.h.clog)
	if *adv21bDebug && r.crashes {
		u, _ := st.IndexedUpTo()
		sh, _ := s.shard(0)
		r.t.Logf("  open: offset %d of %d, indexed up to %s before the replay, %s after, watermark %s advancing %s", off, len(r.h.clog), u0.Format("15:04:05"), u.Format("15:04:05"), sh.Watermark.Format("15:04:05"), sh.Advancing.Format("15:04:05"))
	}
}

func (r *cycRun) ack(n int) {
	for ; r.acked < n; r.acked++ {
		require.NoError(r.t, r.own.st.SetOffset(int64(r.acked)))
	}
}

func (r *cycRun) crash() {
	fs := r.own.cf
	for _, d := range []string{"/", "/data", "/data/" + string(r.own.s.cfg.Layout.SchedulerTable())} {
		f, err := fs.OpenDir(d)
		require.NoError(r.t, err)
		require.NoError(r.t, f.Sync())
		require.NoError(r.t, f.Close())
	}
	clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	_ = r.own.st.Close()
	r.ncrash++
	r.open(clone, clone)
	r.steady = r.rebuilds.Load()
}

// op kinds drawn by the history; both runs draw the same sequence from
// their own rng of the same seed and ignore the crash-only ones.
func adv21bHistory(t *testing.T, seed uint64, crashes bool, ops int) (*cycRun, map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 2121))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	budget := time.Hour
	if rng.IntN(2) == 0 {
		budget = time.Nanosecond // every chunk a callback of its own
	}
	r := &cycRun{t: t, rng: rng, rng2: rand.New(rand.NewPCG(seed, 77)), crashes: crashes, chunk: 1 + rng.IntN(3), budget: budget, now: t0, prod: &recordingProducer{}, offEvery: int64(rng.IntN(3))}
	if crashes {
		cf := vfs.NewCrashableMem()
		r.open(cf, cf)
	} else {
		r.open(vfs.NewMem(), nil)
	}
	h := r.h
	h.advance(r.now)
	h.drain()
	ids := []string{"a", "b", "c", "d", "e"}
	every := []string{"10s", "30s", "1m", "2m"}
	dbg := func(format string, args ...any) {
		if *adv21bDebug && crashes {
			nf := len(r.prod.msgs)
			t.Logf("%3d clog %3d acked %3d fires %3d: "+format, append([]any{len(h.clog), len(h.clog), r.acked, nf}, args...)...)
		}
	}
	for range ops {
		before := len(r.prod.msgs)
		id := ids[rng.IntN(len(ids))]
		x := rng.IntN(20)
		switch {
		case x < 5:
			h.command(id, r.now, fmt.Sprintf(`{"v":1,"op":"put","job":{"every":%q,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"id":%q}}}`, every[rng.IntN(len(every))], id))
		case x < 6:
			h.command(id, r.now, `{"v":1,"op":"pause"}`)
		case x < 7:
			h.command(id, r.now, `{"v":1,"op":"resume"}`)
		case x < 8:
			h.command(id, r.now, `{"v":1,"op":"delete"}`)
		case x < 12:
			r.now = r.now.Add(time.Duration(5+rng.IntN(60)) * time.Second)
			h.advance(r.now)
		case x < 15:
			// deliver some loopbacks (a pass goes on, or not yet)
			for k := rng.IntN(4); k > 0 && len(h.loops) > 0; k-- {
				l := h.loops[0]
				h.loops = h.loops[1:]
				if *adv21bDebug && crashes {
					tr, _ := r.own.s.decodeTrigger(l.Value)
					t.Logf("      loop %s T %s started %s after %s/%s", tr.Kind, tr.T.Format("15:04:05"), tr.Started.Format("15:04:05"), tr.AfterAt.Format("15:04:05"), tr.AfterKey)
				}
				h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, r.now, l.Value)
			}
		case x < 17:
			if crashes {
				r.ack(r.acked + r.rng2.IntN(len(h.clog)-r.acked+1))
			}
		case x < 18:
			if crashes {
				require.NoError(t, r.own.st.Sync())
			}
		default:
			if crashes {
				dbg("crash")
				for _, l := range h.loops {
					tr, _ := r.own.s.decodeTrigger(l.Value)
					t.Logf("      queued: %s T %s started %s after %s/%s", tr.Kind, tr.T.Format("15:04:05"), tr.Started.Format("15:04:05"), tr.AfterAt.Format("15:04:05"), tr.AfterKey)
				}
				r.crash()
			}
		}
		if *adv21bDebug && crashes {
			var f []string
			for _, m := range r.prod.msgs[before:] {
				d, _ := codecs.DecodeDispatch(m.Value)
				f = append(f, d.FireID)
			}
			u, _ := r.own.st.IndexedUpTo()
			sh, _ := r.own.s.shard(0)
			dbg("op %d loops %d upTo %s W %s adv %s fired %v", x, len(h.loops), u.Format("15:04:05"), sh.Watermark.Format("15:04:05"), sh.Advancing.Format("15:04:05"), f)
		}
	}
	h.drain()
	r.now = r.now.Add(3 * time.Minute)
	h.advance(r.now)
	h.drain()
	counts := map[string]int{}
	for id, ps := range h.fired() {
		counts[id] = len(ps)
	}
	return r, counts
}

// TestAdv21bCrashCycles: several crash-restart cycles on the kept store at
// random points between callbacks (passes in the middle, offsets acked
// behind the table, WAL synced at random), against the same inputs
// without crashes. Every fire the control sends once must go out once.
//
// Adversary round 21b: on 00f5627, 9 of seeds 1-300 repeated fires (28 on
// 2f7ff01 and on its parent). The advance that began a pass, delivered
// again, now continues the pass from the cursor in the shard record as a
// continuation (fanout.go) instead of running it from the start; seeds
// 1-300 then repeat nothing, and 1000-2999 two (1197, 2085: open, tagged
// adversary21b in crashcycles_open_adversary21b_test.go).
func TestAdv21bCrashCycles(t *testing.T) {
	fails := 0
	var steadyRebuilds int64
	for seed := *adv21bFirst; seed < *adv21bFirst+uint64(*adv21bSeeds); seed++ {
		ctl, want := adv21bHistory(t, seed, false, *adv21bOps)
		run, got := adv21bHistory(t, seed, true, *adv21bOps)
		steadyRebuilds += ctl.rebuilds.Load()
		var dup, lost, extra []string
		for id, n := range got {
			if n > 1 {
				dup = append(dup, fmt.Sprintf("%s x%d", id, n))
			} else if want[id] == 0 {
				extra = append(extra, id)
			}
		}
		for id := range want {
			if got[id] == 0 {
				lost = append(lost, id)
			}
		}
		if len(dup)+len(lost)+len(extra) > 0 {
			fails++
			slices.Sort(dup)
			slices.Sort(lost)
			slices.Sort(extra)
			if fails <= 10 || testing.Verbose() {
				t.Errorf("seed %d (chunk %d budget %s offEvery %d, %d crashes): repeated %v; lost %v; beyond the control %v",
					seed, run.chunk, run.budget, run.offEvery, run.ncrash, dup, lost, extra)
			}
		}
	}
	t.Logf("%d of %d seeds differ; rebuilds in the control runs (no crash): %d", fails, *adv21bSeeds, steadyRebuilds)
}

// TestAdv21bRebuildMidPassThenStartLoopRepeats (fixed) pins seed 77 of the
// property, which passes on 2f7ff01 and 2f7ff01^ and fails on 00f5627: a
// pass to 12:03:56 fired a@12:03:30 and yielded (its continuation and a
// start loopback for the same T queued); the owner crashes with its offset
// behind the table; the replay passes an older shard record (12:01:28), so
// IndexedUpTo is lowered below the table's watermark 12:03:10 and the next
// callback rebuilds the index from 12:03:10, putting a@12:03:30 back at or
// before the pass's T. The start loopback (T = Advancing) then runs the
// pass again from the start as a fresh pass (not a continuation, so
// passes.note does not mark it inherited), and fires a@12:03:30 again.
func TestAdv21bRebuildMidPassThenStartLoopRepeats(t *testing.T) {
	_, want := adv21bHistory(t, 77, false, 60)
	_, got := adv21bHistory(t, 77, true, 60)
	require.Equal(t, 1, want["a@2026-03-01T12:03:30Z"])
	require.Equal(t, 1, got["a@2026-03-01T12:03:30Z"], "a@12:03:30 dispatched again after the crash-restart")
}
