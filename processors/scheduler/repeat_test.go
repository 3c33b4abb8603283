package scheduler

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// repeatEvent is one input of TestCommandsRepeatedAfterACrashChangeNothing:
// a command (Job set) or an advance.
type repeatEvent struct {
	Job, JS string
	TS      time.Time
	Advance bool
}

// TestCommandsRepeatedAfterACrashChangeNothing generates sequences of
// commands (puts of every kind, late and early, conditional ones, pauses,
// resumes, deletes, manual fires) and advances, and delivers each sequence
// to two partitions: once as written, and once with runs of commands
// consumed again after each "crash" (the same records at the same offsets,
// as goka redelivers what it had not committed). The second must end with
// the same table, byte for byte, and have dispatched the same fire_ids
// with the same payloads: a repeat is not a second command. Before
// JobRecord.Applied a repeated put was an update of itself (simulation
// seeds 70180 and 100351 x 3000 lost fires that way) and a repeated
// conditional command was rejected: with the check switched off, all 40
// seeds end with other records and 17 with other fires. Seeds 41-140 also
// purge tombstones before repeats reach back past them: without the shard's
// purge horizon (codecs.ShardRecord.Purged), 5 of those 100 fail (47, 73,
// 82, 86, 138), a deleted job put again by the repeat of its put.
func TestCommandsRepeatedAfterACrashChangeNothing(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for seed := int64(1); seed <= 140; seed++ {
		// Seeds past 40 jump the shard's time past a tombstone's retention
		// now and then, so repeats also follow purges (adversary 17b).
		long := seed > 40
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			events := repeatEvents(rng, t0, 60, long)
			crashEvery := 4 // commands, on average, between two crashes
			if long {
				crashEvery = 12 // longer, so that more repeats reach back past a purge
			}
			once := newPartitionHarness(t, 8, t0)
			twice := newPartitionHarness(t, 8, t0)
			var sent []int          // twice's commands since its last commit
			offs := map[int]int64{} // each command's offset in chronos-jobs
			for i, e := range events {
				if e.Advance {
					once.advance(e.TS)
					once.drain()
					twice.advance(e.TS)
					twice.drain()
					continue
				}
				offs[i] = int64(len(offs))
				once.commandAt(e.Job, e.TS, e.JS, offs[i])
				once.drain()
				twice.commandAt(e.Job, e.TS, e.JS, offs[i])
				twice.drain()
				sent = append(sent, i)
				if rng.Intn(crashEvery) == 0 {
					// A crash: the commands since the last commit are
					// consumed again, at their offsets.
					from := rng.Intn(len(sent))
					for _, j := range sent[from:] {
						twice.commandAt(events[j].Job, events[j].TS, events[j].JS, offs[j])
						twice.drain()
					}
					sent = nil
				}
			}
			require.Equal(t, firedSet(once), firedSet(twice), "fire_ids and payloads")
			for _, id := range []string{"j0", "j1", "j2"} {
				a, err := once.st.Get(id)
				require.NoError(t, err)
				b, err := twice.st.Get(id)
				require.NoError(t, err)
				require.Equal(t, a, b, "job %s's record after the repeats", id)
			}
		})
	}
}

// firedSet is every fire_id h dispatched with each payload it went out with.
func firedSet(h *partitionHarness) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for id, ps := range h.fired() {
		out[id] = map[string]bool{}
		for _, p := range ps {
			out[id][p] = true
		}
	}
	return out
}

// repeatEvents is n random inputs for three jobs from t0 on: the shard
// advances a few seconds now and then, and commands carry record times up
// to a minute behind it (consumed late) or a few seconds ahead. long: one
// advance in six jumps past a deleted job's tombstone retention
// (codecs.DeletedRetention), and schedules are hourly or one-shot.
func repeatEvents(rng *rand.Rand, t0 time.Time, n int, long bool) []repeatEvent {
	now := t0
	var out []repeatEvent
	for len(out) < n {
		if rng.Intn(3) == 0 {
			step := time.Duration(1+rng.Intn(20)) * time.Second
			if long && rng.Intn(3) == 0 {
				step = codecs.DeletedRetention + time.Duration(rng.Intn(48))*time.Hour
			}
			now = now.Add(step)
			out = append(out, repeatEvent{Advance: true, TS: now})
			continue
		}
		job := fmt.Sprintf("j%d", rng.Intn(3))
		ts := now.Add(time.Duration(rng.Intn(70)-60) * time.Second).Add(time.Duration(rng.Intn(1000)) * time.Millisecond)
		var cond string
		if rng.Intn(4) == 0 {
			cond = fmt.Sprintf(`,"if_version":%d`, rng.Intn(len(out)+2))
		}
		var js string
		op := rng.Intn(7)
		if long && rng.Intn(4) == 0 {
			op = 5 // deletes, so that tombstones are purged before repeats
		}
		switch op {
		case 0, 1, 2:
			scheds := []string{`"every":"1s"`, `"every":"7s"`, `"every":"1m"`, `"cron":"*/5 * * * * *"`}
			if long {
				scheds = []string{`"every":"1h"`, `"cron":"0 0 */2 * * *"`}
			}
			scheds = append(scheds, fmt.Sprintf(`"at":%q`, now.Add(time.Duration(rng.Intn(40)-20)*time.Second).Format(time.RFC3339)))
			sched := scheds[rng.Intn(len(scheds))]
			policy := []string{"fire_once", "fire_all", "skip"}[rng.Intn(3)]
			grace := []string{"0s", "5s", "168h"}[rng.Intn(3)]
			js = fmt.Sprintf(`{"v":1,"op":"put","id":%q,"job":{%s,"payload":{"n":%d},"misfire_policy":%q,"misfire_grace":%q}%s}`,
				job, sched, len(out), policy, grace, cond)
		case 3:
			js = fmt.Sprintf(`{"v":1,"op":"pause","id":%q%s}`, job, cond)
		case 4:
			js = fmt.Sprintf(`{"v":1,"op":"resume","id":%q%s}`, job, cond)
		case 5:
			js = fmt.Sprintf(`{"v":1,"op":"delete","id":%q%s}`, job, cond)
		default:
			js = fmt.Sprintf(`{"v":1,"op":"fire","id":%q}`, job)
		}
		out = append(out, repeatEvent{Job: job, JS: js, TS: ts})
	}
	return out
}

// commandAt delivers a chronos-jobs record at offset off (again, after a
// crash before its commit).
func (h *partitionHarness) commandAt(id string, ts time.Time, js string, off int64) {
	h.t.Helper()
	ctx := &simCtx{topic: h.s.cfg.Layout.Jobs(), key: id, table: h.st, ts: ts, offset: off, ctx: context.Background()}
	require.NoError(h.t, ctx.run(h.s.onCommand, []byte(js)))
	for _, o := range ctx.outs {
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o)
		}
	}
}
