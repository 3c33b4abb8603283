package processors_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// Issue 15 item 1: the due index is a function of the table. A put consumed
// after its shard's watermark passed its first fire (a late put) owes those
// fires; what it owes must live in its record, so that a rebuild of the
// index from the table alone, on any instance, owes the same fires: each
// goes out exactly once.

// onceEach waits until job id has been dispatched every fire of want and
// then the sentinel fire after them (same key, so the same dispatch
// partition: every earlier fire of the job, repeats included, is in the
// collector by then), and fails unless each of want went out exactly once.
func onceEach(t *testing.T, c *testenv.Collector, id string, want []string, sentinel string) {
	t.Helper()
	waitFires(t, c, id, append(append([]string(nil), want...), sentinel))
	got := fireCount(t, c.Dispatches(t), id)
	for _, w := range want {
		require.Equalf(t, 1, got[w], "fire %s of %s dispatched %d times (all: %v)", w, id, got[w], got)
	}
}

// waitSettled waits until the scheduler has consumed every trigger and
// loopback produced so far (the owed fires' settles included), so a clean
// stop hands over a table that says all it did.
func waitSettled(env *testenv.Env) {
	waitAdvanced(env)
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.SchedulerLoop()), time.Minute)
}

// A late put, then its partition moves to an instance with an empty data
// dir (restored from the changelog alone): every owed fire goes out once.
// Then the old owner comes back on its old data dir after the new one fired
// them: its index is rebuilt (ensureIndex: the watermark passed what it
// indexed) and sends none of them again.
func TestLatePutOwedFiresOnceAcrossOwners(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	cfgA := env.Config()
	a := env.Start(cfgA)
	env.Tick(t0.Add(60 * time.Second))
	waitAdvanced(env)
	// Consumed after the watermark (:60) passed its first fire (:10).
	env.Put("late", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`1`)}, t0.Add(5*time.Second))
	env.WaitApplied()
	a.Stop()

	b := env.Start(env.Config()) // an empty data dir: restored from the changelog
	env.Tick(t0.Add(70 * time.Second))
	waitSettled(env)
	env.Tick(t0.Add(80 * time.Second))
	// Owed: :10 to :60 (late, within the grace) and :70.
	onceEach(t, dispatch, "late", scheduledIDs("late", t0.Add(10*time.Second), 10*time.Second, 7), codecs.ScheduledFireID("late", t0.Add(80*time.Second)))
	waitSettled(env)
	b.Stop()

	env.Start(cfgA) // the old owner, whose local index still had them due
	env.Tick(t0.Add(90 * time.Second))
	waitSettled(env)
	env.Tick(t0.Add(100 * time.Second))
	onceEach(t, dispatch, "late", scheduledIDs("late", t0.Add(10*time.Second), 10*time.Second, 9), codecs.ScheduledFireID("late", t0.Add(100*time.Second)))
}

// A late put, then the index is rebuilt from the table on the same
// instance (what ensureIndex does when another owner fired the shard): the
// rebuilt index has the job due at its first owed fire, and every owed fire
// goes out once.
func TestLatePutOwedFiresOnceAfterRebuild(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)
	a := env.Start(env.Config())
	env.Tick(t0.Add(60 * time.Second))
	waitAdvanced(env)
	env.Put("late", codecs.JobDef{Every: "10s", MisfireGrace: "1h", Payload: []byte(`1`)}, t0.Add(5*time.Second))
	env.WaitApplied()

	st := a.Scheduler().Store(topology.Partition("late", env.Layout.Partitions))
	require.NotNil(t, st)
	before, err := st.DueOf("late")
	require.NoError(t, err)
	require.Equal(t, t0.Add(10*time.Second), before, "due entry of the late put before the rebuild")
	indexed, err := st.IndexedUpTo()
	require.NoError(t, err)
	require.NoError(t, st.RebuildIndexes(indexed)) // the scheduler is idle: nothing is due before the next tick
	after, err := st.DueOf("late")
	require.NoError(t, err)
	require.Equal(t, before, after, fmt.Sprintf("due entry of the late put after a rebuild from the table (watermark %s)", indexed))

	env.Tick(t0.Add(70 * time.Second))
	waitSettled(env)
	env.Tick(t0.Add(80 * time.Second))
	onceEach(t, dispatch, "late", scheduledIDs("late", t0.Add(10*time.Second), 10*time.Second, 7), codecs.ScheduledFireID("late", t0.Add(80*time.Second)))
}

// lockedBuf is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An instance that restores its partitions from the changelog onto an
// empty data dir builds each due index once, when its recovery ends: the
// index is derived from the table's watermark, so its first advances find
// it current and do not build it again (one full pass over every job of
// the partition, a tenth of an empty-disk recovery's CPU when they did).
// Its fires are still each sent once.
func TestEmptyDiskRecoveryIndexesOnce(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	a := env.Start(env.Config())
	for i := range 20 {
		env.Put(fmt.Sprintf("j%02d", i), codecs.JobDef{Every: "10s"}, t0)
	}
	env.WaitApplied()
	env.Tick(t0.Add(30 * time.Second)) // every shard's watermark past zero
	waitSettled(env)
	a.Stop()

	var logs lockedBuf
	cfg := env.Config() // an empty data dir
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	env.Start(cfg)
	env.Tick(t0.Add(40 * time.Second))
	waitSettled(env)
	env.Tick(t0.Add(50 * time.Second))
	for i := range 20 {
		id := fmt.Sprintf("j%02d", i)
		onceEach(t, dispatch, id, scheduledIDs(id, t0.Add(10*time.Second), 10*time.Second, 4), codecs.ScheduledFireID(id, t0.Add(50*time.Second)))
	}
	require.NotContains(t, logs.String(), "rebuilt due index", "a recovered partition's index was built a second time")
}
