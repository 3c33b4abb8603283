package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// gateLoops counts the goroutines running a compaction gate's loop.
func gateLoops() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "(*compactionGate).loop")
}

// periodicGranters counts Pebble's default scheduler's goroutines.
func periodicGranters() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "(*ConcurrencyLimitScheduler).periodicGranter")
}

// randPad is an incompressible value of n bytes.
func randPad(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return b
}

// Promise 4 (no unbounded L0 growth while held). A recovery whose
// changelog comes in key order (ascending job ids) flushes memtables that
// do not overlap one another: level 0 stays at one sublevel however many
// files it holds, so the gate (which looks only at sublevels) never
// opens, and level 0 keeps every flush until MarkRecovered. Pebble, with
// its default scheduler and any L0CompactionThreshold, compacts level 0
// once it has L0CompactionFileThreshold (500) files (and moves sequential
// files down trivially long before).
//
// Fixed: the gate also opens at 500 level-0 files (Pebble's file score).
func TestAdv60HeldGateSequentialKeysGrowLevelZeroWithoutBound(t *testing.T) {
	t.Parallel()
	run := func(threshold int) (files int64, sublevels int32) {
		// Sync (--sync-store): no recovery batching, so one flush per
		// 64 KiB memtable (batched, it takes 256 KiB batches: the same at
		// four times the data).
		s := New("/db", Options{FS: vfs.NewMem(), Logger: quiet, Sync: true, RecoveryL0CompactionThreshold: threshold, MemTableSize: 64 << 10})
		require.NoError(t, s.Open())
		defer s.Close()
		rng := rand.New(rand.NewPCG(60, 1))
		pad := randPad(rng, 2000)
		for i := 0; i < 40000; i++ {
			require.NoError(t, s.Set(fmt.Sprintf("job-%08d", i), pad[rng.IntN(1000):][:1000]))
		}
		s.mu.RLock()
		require.NoError(t, s.commitPending())
		s.mu.RUnlock()
		// The gate's loop and the compactions settle.
		require.Eventually(t, func() bool { return s.db.Metrics().Levels[0].TablesCount <= 500 }, 20*time.Second, 20*time.Millisecond,
			"threshold %d: level 0 holds %d files (Pebble's L0CompactionFileThreshold: 500)", threshold, s.db.Metrics().Levels[0].TablesCount)
		m := s.db.Metrics()
		t.Logf("threshold %d: L0 %d files, %d sublevels; L0 flushed %d tables; compactions %d", threshold, m.Levels[0].TablesCount, m.Levels[0].Sublevels, m.Levels[0].TablesFlushed, m.Compact.Count)
		return m.Levels[0].TablesCount, m.Levels[0].Sublevels
	}
	untunedFiles, _ := run(0)
	heldFiles, heldSub := run(16)
	require.Less(t, int(heldSub), 8, "the gate stayed shut: level 0 is one wide sublevel")
	require.LessOrEqual(t, heldFiles, int64(500),
		"held gate: level 0 holds %d files (Pebble's default scheduler: %d; Pebble's L0CompactionFileThreshold: 500)", heldFiles, untunedFiles)
}

// failingOptionsFS fails the creation of Pebble's OPTIONS temp file: a
// failure of pebble.Open after it has registered with the compaction
// scheduler (a full disk at Open does this).
type failingOptionsFS struct{ vfs.FS }

var errAdv60Disk = errors.New("adv60: no space left on device")

func (f failingOptionsFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".dbtmp") {
		return nil, errAdv60Disk
	}
	return f.FS.Create(name, c)
}

// Promise 2/4 (Close during an Open failure; no goroutine leak per
// opened/closed store). pebble.Open registers the scheduler, then fails
// (here: writing its OPTIONS file) and never unregisters it: the gate's
// loop runs forever, polling the half-opened DB every 100 ms and keeping
// it (memtable, caches) reachable. A partition whose Open fails on a full
// disk and is retried leaks one per attempt. The store owns the gate and
// knows the Open failed, so it can stop it.
func TestAdv60FailedOpenLeaksTheGateLoop(t *testing.T) {
	before := gateLoops()
	pebbleBefore := periodicGranters()
	for i := 0; i < 5; i++ {
		s := New(fmt.Sprintf("/plain%d", i), Options{FS: failingOptionsFS{vfs.NewMem()}, Logger: quiet})
		require.ErrorIs(t, s.Open(), errAdv60Disk)
		require.NoError(t, s.Close())
	}
	time.Sleep(300 * time.Millisecond)
	t.Logf("for comparison, Pebble's own scheduler after 5 failed Opens: %d periodicGranter goroutines left", periodicGranters()-pebbleBefore)
	for i := 0; i < 5; i++ {
		s := New(fmt.Sprintf("/db%d", i), Options{FS: failingOptionsFS{vfs.NewMem()}, Logger: quiet, RecoveryL0CompactionThreshold: 16})
		err := s.Open()
		require.ErrorIs(t, err, errAdv60Disk)
		require.NoError(t, s.Close())
	}
	time.Sleep(300 * time.Millisecond)
	require.LessOrEqual(t, gateLoops(), before, "gate loops left running by 5 failed Opens (and Close)")
}

// Promises 2 and 4: stores opened behind the gate and closed in every
// state (never written, mid-recovery, recovered, Close racing
// MarkRecovered, reopened on the same directory) leave no gate loop
// running, and Close never hangs. Run with -race.
func TestAdv60OpenCloseLeavesNoGateLoop(t *testing.T) {
	done := watchdog(t, 50*time.Second, t.Name())
	defer done()
	before := gateLoops()
	rng := rand.New(rand.NewPCG(60, 9))
	for i := 0; i < 24; i++ {
		mem := vfs.NewMem()
		opts := deferOpts(mem)
		opts.RecoveryL0CompactionThreshold = 1 + rng.IntN(64)
		opts.MemTableSize = 64 << 10
		s := New("/db", opts)
		require.NoError(t, s.Open())
		require.True(t, s.tuned())
		n := rng.IntN(4000)
		for j := 0; j < n; j++ {
			require.NoError(t, s.Set(keyN(rng.IntN(2000)), append(val(at(j%77), "b"), randPad(rng, 200)...)))
		}
		switch i % 4 {
		case 0: // closed mid-recovery
			require.NoError(t, s.Close())
		case 1:
			require.NoError(t, s.MarkRecovered())
			require.NoError(t, s.Close())
		case 2: // Close racing MarkRecovered
			errs := make(chan error, 1)
			go func() { errs <- s.MarkRecovered() }()
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			require.NoError(t, s.Close())
			if err := <-errs; err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("MarkRecovered: %v", err)
			}
		case 3: // Close racing writers
			var wg sync.WaitGroup
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for j := 0; ; j++ {
						if err := s.Set(keyN(j%3000), val(at(j%50), "w")); err != nil {
							return
						}
					}
				}(w)
			}
			time.Sleep(50 * time.Millisecond)
			require.NoError(t, s.Close())
			wg.Wait()
		}
		// Reopened on the same directory: not gated.
		s2 := New("/db", opts)
		require.NoError(t, s2.Open())
		require.False(t, s2.tuned(), "a directory with a DB is not gated")
		require.NoError(t, s2.MarkRecovered())
		checkConsistent(t, s2)
		require.NoError(t, s2.Close())
	}
	require.Eventually(t, func() bool { return gateLoops() <= before }, 2*time.Second*watchdogScale, 20*time.Millisecond, "gate loops left: %d", gateLoops()-before)
}
