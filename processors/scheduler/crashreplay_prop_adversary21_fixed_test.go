package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestAdv21CrashReplayProperty generalizes TestAdv21CrashMidRecoveryThenReplayRepeatsAFire:
// a random history on owner 1 (puts, pauses, resumes, deletes, advances),
// its changelog recovered by owner 2 on an empty deferred store that
// crashes at a random record (mid-recovery) or just after MarkRecovered,
// with no offset committed; owner 3 restarts on what the crash kept,
// recovers from the stored offset and advances a few times. Its dispatches
// must be those of a control owner that recovered the same changelog on an
// empty data dir (whose index is derived from the final table).
func TestAdv21CrashReplayProperty(t *testing.T) {
	t.Parallel()
	fails, byMode := 0, map[string]int{}
	const seeds = 60
	for seed := uint64(1); seed <= seeds; seed++ {
		if msg := adv21CrashReplay(t, seed); msg != "" {
			fails++
			byMode[msg[:6]]++
			if fails <= 5 || testing.Verbose() {
				t.Errorf("seed %d: %.300s", seed, msg)
			}
		}
	}
	t.Logf("%d of %d seeds differ from the control: %v", fails, seeds, byMode)
}

func adv21CrashReplay(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 21))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h1 := &clogHarness{partitionHarness: newPartitionHarness(t, 1+rng.IntN(4), t0)}
	now := t0
	h1.advance(now)
	h1.drain()
	ids := []string{"a", "b", "c", "d"}
	every := []string{"10s", "30s", "1m", "2m"}
	for range 10 + rng.IntN(20) {
		id := ids[rng.IntN(len(ids))]
		switch r := rng.IntN(10); {
		case r < 4:
			h1.command(id, now, fmt.Sprintf(`{"v":1,"op":"put","job":{"every":%q,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"id":%q}}}`, every[rng.IntN(len(every))], id))
		case r < 5:
			h1.command(id, now, `{"v":1,"op":"pause"}`)
		case r < 6:
			h1.command(id, now, `{"v":1,"op":"resume"}`)
		case r < 7:
			h1.command(id, now, `{"v":1,"op":"delete"}`)
		default:
			now = now.Add(time.Duration(5+rng.IntN(60)) * time.Second)
			h1.advance(now)
		}
		h1.drain()
	}
	clog := h1.clog
	mode := rng.IntN(2)
	crashAt := rng.IntN(len(clog) + 1)

	recoverAndRun := func(fs3 vfs.FS) (map[string][]string, error) {
		n := now
		prod := &recordingProducer{}
		s := adv21Scheduler(t, fs3, prod, &n)
		st, err := s.StorageBuilder()(string(s.cfg.Layout.SchedulerTable()), 0)
		require.NoError(t, err)
		require.NoError(t, st.Open())
		defer st.Close()
		adv21Replay(t, st, clog, len(clog))
		require.NoError(t, st.MarkRecovered())
		h := &partitionHarness{t: t, s: s, st: s.Store(0), prod: prod, now: n, chunk: 3, budget: time.Hour}
		r := rand.New(rand.NewPCG(seed, 3))
		for range 3 {
			n = n.Add(time.Duration(5+r.IntN(60)) * time.Second)
			h.advance(n)
			h.drain()
		}
		return h.fired(), nil
	}
	control, _ := recoverAndRun(vfs.NewMem())

	fs := vfs.NewCrashableMem()
	n2 := now
	s2 := adv21Scheduler(t, fs, &recordingProducer{}, &n2)
	st2, err := s2.StorageBuilder()(string(s2.cfg.Layout.SchedulerTable()), 0)
	require.NoError(t, err)
	require.NoError(t, st2.Open())
	if mode == 0 {
		adv21Replay(t, st2, clog, crashAt)
		require.NoError(t, s2.Store(0).Sync())
	} else {
		adv21Replay(t, st2, clog, len(clog))
		require.NoError(t, st2.MarkRecovered())
	}
	for _, d := range []string{"/", "/data", "/data/" + string(s2.cfg.Layout.SchedulerTable())} {
		f, err := fs.OpenDir(d)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	fs3 := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	require.NoError(t, st2.Close())
	got, _ := recoverAndRun(fs3)

	var extra, missing []string
	for id := range got {
		if _, ok := control[id]; !ok {
			extra = append(extra, id)
		}
	}
	for id := range control {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(extra)+len(missing) == 0 {
		return ""
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("mode %d crash at %d/%d: dispatched beyond the control %v; the control's not dispatched %v", mode, crashAt, len(clog), extra, missing)
}
