package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

// adv63GOGC reads the GOGC in force without changing it.
func adv63GOGC() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestAdversary63GCPercentOverflowsAtALargeGOGC: base × (live − held) is
// computed in uint64 and wraps for GOGC near the runtime's largest
// (2^31−1, which the runtime accepts from the environment) with a live
// heap of 16 GiB: the percent should be about base, and never above base
// nor below what less held gives.
func TestAdversary63GCPercentOverflowsAtALargeGOGC(t *testing.T) {
	base := math.MaxInt32
	live := uint64(16 << 30)
	held := uint64(1 << 20)
	want := float64(base) * float64(live-held) / float64(live)
	got := gcPercent(base, live, held)
	t.Logf("gcPercent(%d, %d, %d) = %d, want about %.0f", base, live, held, got, want)
	require.InDelta(t, want, float64(got), want/1000, "the product base × (live − held) wrapped around 2^64")
	// and monotonic: more held never gives a higher percent
	require.LessOrEqual(t, gcPercent(base, live, held*2), gcPercent(base, live, held))
}

// TestAdversary63GCPercentEdges: live 0, held > live, base 0, base 10000.
func TestAdversary63GCPercentEdges(t *testing.T) {
	require.Equal(t, 100, gcPercent(100, 0, 0))
	require.Equal(t, 0, gcPercent(0, 1<<30, 1<<29), "GOGC=0 stays 0")
	require.Equal(t, 0, gcPercent(0, 1<<30, 2<<30))
	require.Equal(t, 10, gcPercent(100, 1<<30, 2<<30))
	require.Equal(t, 5, gcPercent(5, 1<<30, 2<<30), "base under the floor: base")
	require.Equal(t, 5000, gcPercent(10000, 1<<30, 1<<29))
	require.Equal(t, 10, gcPercent(10000, 1<<30, (1<<30)-1), "floor")
	require.Equal(t, 10000, gcPercent(10000, math.MaxUint64/20000, 0))
}

// adv63OpenStore opens a store whose 64 MiB memtable is held on Go's heap
// (without cgo), so paceGC has something to pace by.
func adv63OpenStore(t *testing.T) *store.Store {
	t.Helper()
	if !store.MemoryOnGoHeap {
		t.Skip("run with CGO_ENABLED=0: the pacer runs only when the stores' memory is Go heap")
	}
	s := store.New(t.TempDir(), store.Options{MemTableSize: 64 << 20, CacheSize: 1 << 20})
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	v := []byte(strings.Repeat("x", 1000))
	for i := range 1000 {
		require.NoError(t, s.Set("k"+strconv.Itoa(i), v))
	}
	return s
}

// adv63WaitGOGC waits up to 3 s for GOGC to satisfy ok, collecting so the
// live heap is measured.
func adv63WaitGOGC(t *testing.T, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		runtime.GC()
		g := adv63GOGC()
		if ok(g) || time.Now().After(deadline) {
			return g
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAdversary63PaceGCStopTwiceCtxFirstNoLeak: stop called twice, ctx
// ended before stop, no goroutine left, GOGC back at the base.
func TestAdversary63PaceGCStopTwiceCtxFirstNoLeak(t *testing.T) {
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the test needs no GOMEMLIMIT")
	adv63OpenStore(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	goroutines := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	stop := paceGC(ctx, nil, false)
	g := adv63WaitGOGC(t, func(g int) bool { return g < gcPaceDefaultPercent })
	t.Logf("paced GOGC with a 64 MiB memtable held: %d", g)
	require.Less(t, g, gcPaceDefaultPercent, "the pacer lowers GOGC below its base while a store holds most of the heap")
	cancel() // ctx first
	stop()
	stop() // twice
	require.Equal(t, 100, adv63GOGC(), "GOGC back at the base after stop")
	time.Sleep(50 * time.Millisecond)
	require.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "no pacer goroutine left")

	// A second run in the same process (bench twice), stopped without ctx.
	stop = paceGC(context.Background(), nil, false)
	g = adv63WaitGOGC(t, func(g int) bool { return g < gcPaceDefaultPercent })
	require.Less(t, g, gcPaceDefaultPercent)
	stop()
	require.Equal(t, 100, adv63GOGC(), "GOGC back at the base after the second run")
}

// TestAdversary63OverlappingPacersLeaveGOGCPaced: a pacer started while
// another runs (two benches in one process, or bench inside a process that
// already paces) takes the first one's paced GOGC as its base; stopped
// last, it leaves the process at that GOGC for good.
func TestAdversary63OverlappingPacersLeaveGOGCPaced(t *testing.T) {
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the test needs no GOMEMLIMIT")
	adv63OpenStore(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	stop1 := paceGC(context.Background(), nil, false)
	g := adv63WaitGOGC(t, func(g int) bool { return g < gcPaceDefaultPercent })
	require.Less(t, g, gcPaceDefaultPercent)
	stop2 := paceGC(context.Background(), nil, false)
	stop1()
	stop2()
	got := adv63GOGC()
	t.Logf("GOGC after both pacers stopped: %d (paced value was %d, the process's base 100)", got, g)
	require.Equal(t, 100, got, "GOGC should be the process's base once every pacer stopped")
}

// TestAdversary63NoPacingUnderGOMEMLIMIT: with a memory limit, paceGC does
// nothing: GOGC stays at its base while a store holds most of the heap.
func TestAdversary63NoPacingUnderGOMEMLIMIT(t *testing.T) {
	adv63OpenStore(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	old := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(old)
	stop := paceGC(context.Background(), nil, false)
	defer stop()
	time.Sleep(1500 * time.Millisecond)
	g := adv63WaitGOGC(t, func(g int) bool { return g < 100 })
	require.Equal(t, 100, g, "GOMEMLIMIT turns pacing off")
}

// TestAdversary63NoPacingWithGOGCOff: GOGC=off stays off.
func TestAdversary63NoPacingWithGOGCOff(t *testing.T) {
	adv63OpenStore(t)
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	stop := paceGC(context.Background(), nil, false)
	time.Sleep(1200 * time.Millisecond)
	require.Equal(t, -1, debug.SetGCPercent(-1), "GOGC=off stays off")
	stop()
	require.Equal(t, -1, debug.SetGCPercent(-1), "and off after stop")
}

// TestAdversary63PacerRacesStoresOpeningAndClosing runs a pacer (its held
// reading store.OpenMemory, as paceGC's) every millisecond while stores
// open, are written and close, then stops it in the middle: for -race
// (which needs cgo, so the pacer is built by hand here rather than by
// paceGC, a no-op with cgo).
func TestAdversary63PacerRacesStoresOpeningAndClosing(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	p := &gcPacer{base: 100, restore: 100, percent: 100, set: debug.SetGCPercent, live: liveHeap, held: func() uint64 {
		m := store.OpenMemory()
		return m.MemTables + m.BlockCache
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			p.pace()
			time.Sleep(time.Millisecond)
		}
		p.set(p.base)
	}()
	v := []byte(strings.Repeat("y", 4000))
	for round := range 20 {
		s := store.New(t.TempDir(), store.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20})
		require.NoError(t, s.Open())
		for i := range 300 {
			require.NoError(t, s.Set(strconv.Itoa(round)+"-"+strconv.Itoa(i), v))
		}
		require.NoError(t, s.Close())
	}
	cancel()
	<-done
	require.Equal(t, 100, adv63GOGC())
}

// adv63Node is a pointerful object of the Go code's own live heap (the
// schedule cache, sarama's records: what the collector has to scan).
type adv63Node struct {
	next *adv63Node
	buf  [48]byte
}

// TestAdversary63GCCostPacedAgainstCgo measures the collector's CPU share
// and cycles for the same churn (2 GiB of small pointerful garbage over a
// 32 MiB pointerful live set) three ways: no store memory on the heap at
// GOGC=100 (as with cgo), a 448 MiB noscan ballast standing for the
// stores (memtables and block caches, ~450 MiB in the 3M run) unpaced, and
// that ballast paced (pace() run as often as a second of this churn).
// Promise: paced, the headroom is that of the cgo build, so its
// collections should be about as many as cgo's, not back to back.
func TestAdversary63GCCostPacedAgainstCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 6 GiB")
	}
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	names := []string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds", "/gc/heap/goal:bytes"}
	read := func() []metrics.Sample {
		s := make([]metrics.Sample, len(names))
		for i, n := range names {
			s[i].Name = n
		}
		metrics.Read(s)
		return s
	}
	var live []*adv63Node
	for range (32 << 20) / 64 {
		live = append(live, &adv63Node{})
	}
	churn := func(pace func()) (cycles uint64, gcFrac float64, wall time.Duration, maxGoal uint64) {
		runtime.GC()
		a := read()
		start := time.Now()
		var sink *adv63Node
		for i := 0; i < (2<<30)/64; i++ {
			n := &adv63Node{next: sink}
			if i%64 == 0 {
				sink = nil
			} else {
				sink = n
			}
			if i%(1<<20) == 0 { // every 64 MiB allocated
				live[i%len(live)] = n
				if pace != nil {
					pace()
				}
				maxGoal = max(maxGoal, read()[3].Value.Uint64())
			}
		}
		wall = time.Since(start)
		b := read()
		gc := b[1].Value.Float64() - a[1].Value.Float64()
		tot := b[2].Value.Float64() - a[2].Value.Float64()
		return b[0].Value.Uint64() - a[0].Value.Uint64(), gc / tot, wall, maxGoal
	}
	cgoCycles, cgoFrac, cgoWall, cgoGoal := churn(nil)
	ballast := make([]byte, 448<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	unCycles, unFrac, unWall, unGoal := churn(nil)
	p := &gcPacer{base: 100, restore: 100, percent: 100, live: liveHeap, held: func() uint64 { return uint64(len(ballast)) }, set: debug.SetGCPercent}
	runtime.GC()
	p.pace()
	pacedGOGC := p.percent
	paCycles, paFrac, paWall, paGoal := churn(p.pace)
	debug.SetGCPercent(100)
	runtime.KeepAlive(ballast)
	runtime.KeepAlive(live)
	t.Logf("no ballast, GOGC 100 (cgo):   %4d cycles, GC CPU %.1f%%, %v, max goal %d MiB", cgoCycles, 100*cgoFrac, cgoWall.Round(time.Millisecond), cgoGoal>>20)
	t.Logf("448 MiB ballast, unpaced:      %4d cycles, GC CPU %.1f%%, %v, max goal %d MiB", unCycles, 100*unFrac, unWall.Round(time.Millisecond), unGoal>>20)
	t.Logf("448 MiB ballast, paced GOGC %d: %4d cycles, GC CPU %.1f%%, %v, max goal %d MiB", pacedGOGC, paCycles, 100*paFrac, paWall.Round(time.Millisecond), paGoal>>20)
	require.LessOrEqual(t, paCycles, cgoCycles*3/2+2, "paced: about as many collections as the cgo build's headroom gives")
	require.LessOrEqual(t, paFrac, cgoFrac*1.5+0.02, "paced: the collector's CPU share about the cgo build's")
}

// adv63Scrape returns go_gc_gogc_percent from /metrics (-1: not there).
func adv63Scrape(t *testing.T, addr string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_gc_gogc_percent "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return int(f)
		}
	}
	return -1
}

// adv63Dev runs `chronos dev` in this process until the returned stop, on
// loopback ports that were free a moment ago (fixed ports sit in Linux's
// ephemeral range, where another test's outgoing connection can hold them:
// CI failed once on "bind: address already in use").
func adv63Dev(t *testing.T) (addr string, stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	addr = freeAddr(t)
	root.SetArgs([]string{"dev", "--http-addr", addr, "--kafka-addr", freeAddr(t),
		"--data-dir", t.TempDir(), "--insecure-no-auth", "--log-level", "warn"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	return addr, func() error { cancel(); return <-done }
}

// TestAdversary63DevPacesAndShowsIt: `chronos dev` without a memory limit
// (built without cgo) shows a paced go_gc_gogc_percent under 100 once its
// stores are open, and leaves GOGC at the base after it stops.
func TestAdversary63DevPacesAndShowsIt(t *testing.T) {
	if !store.MemoryOnGoHeap {
		t.Skip("run with CGO_ENABLED=0")
	}
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	addr, stop := adv63Dev(t)
	devBase := paceBase(100, false, true) // dev hosts the embedded broker: Go's 100
	seen := map[int]bool{}
	deadline := time.Now().Add(60 * time.Second)
	low := -1
	for time.Now().Before(deadline) {
		if g := adv63Scrape(t, addr); g >= 0 {
			seen[g] = true
			if g < devBase {
				low = g
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	m := store.OpenMemory()
	t.Logf("go_gc_gogc_percent values seen %v; stores %d, memtables %d MiB, block cache %d MiB, live heap %d MiB",
		seen, m.Stores, m.MemTables>>20, m.BlockCache>>20, liveHeap()>>20)
	require.NoError(t, stop())
	require.GreaterOrEqual(t, low, 10, "dev should show a paced GOGC in go_gc_gogc_percent")
	require.Less(t, low, devBase, "paced below the pacer's base while the stores hold memory")
	require.Equal(t, 100, adv63GOGC(), "GOGC back at the base once dev stopped")
}

// TestAdversary63DevUnderGOMEMLIMITDoesNotPace: with a memory limit the
// metric stays at 100.
func TestAdversary63DevUnderGOMEMLIMITDoesNotPace(t *testing.T) {
	if !store.MemoryOnGoHeap {
		t.Skip("run with CGO_ENABLED=0")
	}
	old := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(old)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	addr, stop := adv63Dev(t)
	seen := map[int]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if g := adv63Scrape(t, addr); g >= 0 {
			seen[g] = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, stop())
	t.Logf("go_gc_gogc_percent values seen under GOMEMLIMIT=1GiB: %v", seen)
	require.Equal(t, map[int]bool{100: true}, seen)
}
