package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestFanoutStep: a bucket fan-out runs each chunk once, after the member
// the table names, however often its messages arrive (simulation seed 9077:
// a crash that kept a continuation, then its redelivery, made two; the
// second fired a member again after an update changed its payload).
func TestFanoutStep(t *testing.T) {
	t.Parallel()
	at := cmdSec(10)
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t1"}
	cont := func(after string, step int64) codecs.ShardTrigger {
		c := tr
		c.AfterKey, c.Started, c.Step = after, cmdSec(11), step
		return c
	}
	under := codecs.FanoutRef{TriggerID: "t1", Bucket: "b", T: at, Started: cmdSec(11), After: "j5"}
	done := under
	done.Done, done.Finished = true, cmdSec(12)
	other := under
	other.T = cmdSec(9) // the same trigger id sent earlier: another fan-out
	tests := []struct {
		name    string
		fanouts []codecs.FanoutRef
		tr      codecs.ShardTrigger
		after   string
		run     bool
	}{
		{"a first chunk", nil, tr, "", true},
		{"a first chunk beside another fan-out of its trigger id", []codecs.FanoutRef{other}, tr, "", true},
		{"the continuation the table names", []codecs.FanoutRef{under}, cont("j5", 1), "j5", true},
		{"a spare continuation runs the next chunk, not its own again", []codecs.FanoutRef{under}, cont("j2", 1), "j5", true},
		{"the trigger redelivered while under way continues it", []codecs.FanoutRef{under}, tr, "j5", true},
		{"the trigger redelivered once done: nothing", []codecs.FanoutRef{done}, tr, "", false},
		{"a continuation once done: nothing", []codecs.FanoutRef{done}, cont("j5", 1), "", false},
		{"a continuation named once, forgotten since: nothing", nil, cont("j5", 1), "", false},
		{"a continuation never named (an earlier release, or a full table): its own cursor", nil, cont("j3", 0), "j3", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, ok := fanoutStep(tc.fanouts, tc.tr)
			require.Equal(t, tc.run, ok)
			if ok {
				require.Equal(t, tc.after, run.AfterKey)
				if tc.tr.AfterKey == "" && tc.after == "" {
					require.True(t, run.Started.IsZero(), "a first chunk starts now")
				} else {
					require.Equal(t, cmdSec(11), run.Started)
				}
			}
		})
	}
}

func TestWithFanout(t *testing.T) {
	t.Parallel()
	ref := func(i int, done bool) codecs.FanoutRef {
		return codecs.FanoutRef{TriggerID: fmt.Sprint("t", i), Bucket: "b", T: cmdSec(i), After: "k", Done: done, Finished: cmdSec(1000 + i)}
	}
	// A fan-out's entry is replaced, not added again.
	one := []codecs.FanoutRef{ref(1, false)}
	next := ref(1, false)
	next.After = "z"
	got, tracked := withFanout(one, next)
	require.True(t, tracked)
	require.Equal(t, []codecs.FanoutRef{next}, got)
	require.Equal(t, "k", one[0].After, "changes nothing it is given")

	// Full: done entries make room, oldest first; with none done a new
	// fan-out runs untracked and the table is unchanged.
	var full []codecs.FanoutRef
	for i := range maxFanouts {
		full = append(full, ref(i, i == 7 || i == 3))
	}
	got, tracked = withFanout(full, ref(999, false))
	require.True(t, tracked)
	require.Len(t, got, maxFanouts)
	require.NotContains(t, got, ref(3, true), "the oldest done entry made room")
	require.Contains(t, got, ref(7, true))
	require.Equal(t, ref(999, false), got[len(got)-1])
	var busy []codecs.FanoutRef
	for i := range maxFanouts {
		busy = append(busy, ref(i, false))
	}
	got, tracked = withFanout(busy, ref(999, false))
	require.False(t, tracked)
	require.Equal(t, busy, got)

	// Done entries are forgotten once fanoutKeep has passed since they
	// finished and the shard has completed fanoutKeepPasses advances;
	// fan-outs under way never are.
	aged := func(i int, passes uint64) codecs.FanoutRef { f := ref(i, true); f.Passes = passes; return f }
	kept := []codecs.FanoutRef{aged(1, fanoutKeepPasses-1), ref(2, false), aged(900, fanoutKeepPasses-1)}
	late := cmdSec(1001).Add(fanoutKeep + time.Nanosecond)
	require.Equal(t, []codecs.FanoutRef{aged(1, fanoutKeepPasses), ref(2, false), aged(900, fanoutKeepPasses)},
		prunedFanouts(kept, cmdSec(1001).Add(fanoutKeep)), "not yet fanoutKeep: kept, one more pass seen")
	require.Equal(t, []codecs.FanoutRef{ref(2, false), aged(900, fanoutKeepPasses)}, prunedFanouts(kept, late))
	fresh := []codecs.FanoutRef{aged(1, 0)}
	require.Equal(t, []codecs.FanoutRef{aged(1, 1)}, prunedFanouts(fresh, cmdSec(1001).Add(time.Hour)),
		"an outage: the shard's time leaps, the passes since do not")
	require.Nil(t, prunedFanouts([]codecs.FanoutRef{aged(1, fanoutKeepPasses-1)}, late))
}

// TestBucketContinuationTwiceFiresEachMemberOnce runs a bucket fan-out
// through the scheduler's callbacks with one member a chunk, delivers its
// first continuation twice (a crash kept it, then the redelivered trigger
// sent it again) with an update of the next member in between, and the
// trigger itself once more after the fan-out finished: every member fires
// once, with the payload it had when its chunk ran (simulation seed 9077 x
// 800 operations fired j1@t46 with two payloads).
func TestBucketContinuationTwiceFiresEachMemberOnce(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 1, at)
	put := func(id, payload string) {
		h.command(id, at, `{"v":1,"op":"put","job":{"every":"1h","bucket":"b","payload":`+payload+`}}`)
	}
	for _, id := range []string{"j0", "j1", "j2"} {
		put(id, `{"v":1}`)
	}
	tr := codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: "t46"}
	h.bucketTrigger(tr)
	require.Len(t, h.loops, 1, "one member a chunk: a continuation")
	first := h.loops[0]
	h.loops = h.loops[1:]
	loop := func(o simOut) { h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), o.Key, at, o.Value) }
	loop(first)          // the continuation: j1
	put("j2", `{"v":2}`) // an update between the continuation and its copy
	loop(first)          // the copy runs the next chunk (j2), not j1 again
	h.drain()
	h.bucketTrigger(tr) // the trigger redelivered after its fan-out finished
	require.Empty(t, h.loops, "nothing left to run")
	fired := map[string][]string{}
	for id, payloads := range h.fired() {
		if strings.HasSuffix(id, "@t46") {
			fired[id] = payloads
		}
	}
	require.Equal(t, map[string][]string{"j0@t46": {`{"v":1}`}, "j1@t46": {`{"v":1}`}, "j2@t46": {`{"v":2}`}}, fired)
}

// TestBucketTriggerIDBounded: the shard record names each fan-out by its
// trigger id, so a bucket shard trigger's id is bounded as a job id is:
// a longer one (the router never sends one; a record forged onto the
// internal topic may) is rejected, and the partition goes on.
func TestBucketTriggerIDBounded(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 1, at)
	h.command("j0", at, `{"v":1,"op":"put","job":{"every":"1h","bucket":"b"}}`)
	for n, ok := range map[int]bool{codecs.MaxIDLen: true, codecs.MaxIDLen + 1: false, 900_000: false} {
		raw := codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindBucket, T: at, Bucket: "b", TriggerID: strings.Repeat("t", n)})
		_, err := h.s.decodeTrigger(raw)
		require.Equal(t, ok, err == nil, "%d bytes: %v", n, err)
		h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), at, raw) // rejected or run, never a failure
	}
	for _, f := range h.shard().Fanouts {
		require.LessOrEqual(t, len(f.TriggerID), codecs.MaxIDLen)
	}
	require.Len(t, h.fired(), 1, "only the bounded trigger fired j0")
}
