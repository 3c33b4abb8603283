package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

// adv64Prep skips without the pacer (cgo), checks no memory limit and no
// store is open (so the pacer's GOGC is exactly its base), sets GOGC to
// start (as the runtime would have from the environment) and the
// environment's GOGC (unset when env is nil), and restores both after.
func adv64Prep(t *testing.T, env *string, start int) {
	t.Helper()
	if !store.MemoryOnGoHeap {
		t.Skip("run with CGO_ENABLED=0: the pacer runs only when the stores' memory is Go heap")
	}
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the test needs no GOMEMLIMIT")
	require.Zero(t, store.OpenMemory().Stores, "no store open: the pacer's GOGC is its base")
	t.Setenv("GOGC", "restored-after")
	if env == nil {
		require.NoError(t, os.Unsetenv("GOGC"))
	} else {
		require.NoError(t, os.Setenv("GOGC", *env))
	}
	old := debug.SetGCPercent(start)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	pacing.Lock()
	users := pacing.users
	pacing.Unlock()
	require.Zero(t, users, "no pacer running at the start")
}

// adv64Log returns a JSON logger and the records it wrote with the
// pacer's message.
func adv64Log() (*slog.Logger, func() []map[string]any) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	return log, func() []map[string]any {
		var out []map[string]any
		dec := json.NewDecoder(strings.NewReader(buf.String()))
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				return out
			}
			if s, _ := m["msg"].(string); strings.Contains(s, "GOGC paced") {
				out = append(out, m)
			}
		}
	}
}

// adv64Steady waits for GOGC to reach want and checks it stays there for
// 1.2 s (more than one gcPaceEvery).
func adv64Steady(t *testing.T, want int, what string) {
	t.Helper()
	g := adv63WaitGOGC(t, func(g int) bool { return g == want })
	require.Equal(t, want, g, what)
	time.Sleep(1200 * time.Millisecond)
	require.Equal(t, want, adv63GOGC(), what+" (a second later)")
}

func adv64Str(s string) *string { return &s }

// TestAdversary64BaseByEnvironmentAndBroker: the base the pacer sets (no
// store open, so GOGC is the base), the log line's gogc and gogc_set, and
// the GOGC given back at stop, for each documented case.
func TestAdversary64BaseByEnvironmentAndBroker(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      *string
		start    int // the GOGC the runtime read from env
		embedded bool
		base     int
		set      bool
	}{
		{"unset", nil, 100, false, 50, false},
		{"empty", adv64Str(""), 100, false, 50, false},
		{"unset-embedded", nil, 100, true, 100, false},
		{"empty-embedded", adv64Str(""), 100, true, 100, false},
		{"GOGC=100", adv64Str("100"), 100, false, 100, true},
		{"GOGC=200", adv64Str("200"), 200, false, 200, true},
		{"GOGC=25-embedded", adv64Str("25"), 25, true, 25, true},
		{"GOGC=0", adv64Str("0"), 0, false, 0, true},
		// The runtime reads a GOGC it cannot parse as 100 (Go's default);
		// the pacer counts it as set: 100, not 50.
		{"GOGC=garbage", adv64Str("abc"), 100, false, 100, true},
		// A percent the process set itself (debug.SetGCPercent), no env.
		{"self-set-200", nil, 200, false, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			adv64Prep(t, c.env, c.start)
			log, records := adv64Log()
			stop := paceGC(context.Background(), log, c.embedded)
			adv64Steady(t, c.base, "the pacer's base with nothing held")
			stop()
			require.Equal(t, c.start, adv63GOGC(), "GOGC given back at stop: the one the process started with")
			recs := records()
			require.Len(t, recs, 1, "one log line at start")
			require.EqualValues(t, c.base, recs[0]["gogc"], "the log line's gogc")
			require.Equal(t, c.set, recs[0]["gogc_set"], "the log line's gogc_set")
		})
	}
}

// TestAdversary64OffStaysOffAndNoLog: GOGC=off: no pacing, no log line,
// off after stop.
func TestAdversary64OffStaysOffAndNoLog(t *testing.T) {
	adv64Prep(t, adv64Str("off"), -1)
	log, records := adv64Log()
	stop := paceGC(context.Background(), log, false)
	time.Sleep(1200 * time.Millisecond)
	require.Equal(t, -1, debug.SetGCPercent(-1))
	stop()
	require.Equal(t, -1, debug.SetGCPercent(-1))
	require.Empty(t, records())
}

// TestAdversary64OverlapsKeepTheFirstBaseAndRestore: dev (embedded) then
// run joining, leaving in either order; run then bench-embedded; each
// time GOGC is the first caller's base while any is in, and 100 after.
func TestAdversary64OverlapsKeepTheFirstBaseAndRestore(t *testing.T) {
	adv64Prep(t, nil, 100)
	for _, c := range []struct {
		first, second bool // embedded
		firstLeaves   bool
		base          int
	}{
		{true, false, true, 100},
		{true, false, false, 100},
		{false, true, true, 50},
		{false, true, false, 50},
	} {
		s1 := paceGC(context.Background(), nil, c.first)
		adv64Steady(t, c.base, "first")
		ctx2, cancel2 := context.WithCancel(context.Background())
		s2 := paceGC(ctx2, nil, c.second)
		if c.firstLeaves {
			s1()
		} else {
			cancel2()
			time.Sleep(50 * time.Millisecond) // AfterFunc's goroutine
		}
		adv64Steady(t, c.base, "one left, the other still in")
		s1()
		s2()
		cancel2()
		require.Equal(t, 100, adv63GOGC(), "GOGC back at 100 once both left (%+v)", c)
	}
}

// TestAdversary64CtxDoneBeforePaceGC: a ctx already ended stops the pacer
// at once: GOGC back at the start, no goroutine left, and a next pacer
// finds the start value again.
func TestAdversary64CtxDoneBeforePaceGC(t *testing.T) {
	adv64Prep(t, nil, 100)
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stop := paceGC(ctx, nil, false)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		pacing.Lock()
		u := pacing.users
		pacing.Unlock()
		if u == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 100, adv63GOGC())
	stop()
	time.Sleep(50 * time.Millisecond)
	require.LessOrEqual(t, runtime.NumGoroutine(), goroutines)
	stop = paceGC(context.Background(), nil, false)
	adv64Steady(t, 50, "the next pacer's base")
	stop()
	require.Equal(t, 100, adv63GOGC())
}

// TestAdversary64ManyJoinsAndLeaves: concurrent callers join and leave by
// stop or ctx in random order; at the end no user is left and GOGC is 100.
func TestAdversary64ManyJoinsAndLeaves(t *testing.T) {
	adv64Prep(t, nil, 100)
	r := rand.New(rand.NewPCG(64, 64))
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		emb := r.IntN(2) == 0
		byCtx := r.IntN(2) == 0
		d := time.Duration(r.IntN(3000)) * time.Microsecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop := paceGC(ctx, nil, emb)
			time.Sleep(d)
			if byCtx {
				cancel()
			} else {
				stop()
				stop()
			}
			cancel()
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(3 * time.Second)
	for {
		pacing.Lock()
		u := pacing.users
		pacing.Unlock()
		if u == 0 || time.Now().After(deadline) {
			require.Zero(t, u, "users left")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 100, adv63GOGC())
}

// TestAdversary64EmptyGOMEMLIMITInACgroup: the pacer's docs say nothing
// is paced under a cgroup's limit, and the commit counts an empty GOGC as
// unset "as the runtime reads it". The runtime reads an empty GOMEMLIMIT
// as unset too (no limit), but autoMemoryLimit counts it as set and takes
// no limit from the cgroup: in a 1 GiB cgroup with GOMEMLIMIT= the
// process runs without a memory limit, and paced.
func TestAdversary64EmptyGOMEMLIMITInACgroup(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc/self"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc/self/cgroup"), []byte("0::/pod\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/fs/cgroup/pod"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/fs/cgroup/pod/memory.max"), []byte("1073741824\n"), 0o644))
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	cg := float64(1 << 30)
	want := int64(cg * memLimitShare)

	t.Setenv("GOMEMLIMIT", "x")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	set, cgroup := autoMemoryLimit(root)
	require.Equal(t, int64(1<<30), cgroup, "the fake cgroup's limit is read (the test's premise)")
	require.Equal(t, want, set)
	debug.SetMemoryLimit(math.MaxInt64)

	t.Setenv("GOMEMLIMIT", "") // the runtime reads it as no limit
	set, _ = autoMemoryLimit(root)
	limit := debug.SetMemoryLimit(-1)
	t.Logf("GOMEMLIMIT empty in a 1 GiB cgroup: autoMemoryLimit set %d, limit in force %d (no limit: %v); shouldPace: %v",
		set, limit, limit == math.MaxInt64, shouldPace(true, 100, limit))
	require.Equal(t, want, set,
		"an empty GOMEMLIMIT is no limit to the runtime: the cgroup's should be taken, else the pod runs unlimited and paced")
}
