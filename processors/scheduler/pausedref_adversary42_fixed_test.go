package scheduler

import (
	"context"

	"github.com/chronos-scheduler/chronos/codecs"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Adversary round 42: attacks on 71f840a (sendOwed plans each owed time
// as the pass that would reach it plans it: passOf, graceAt, shared
// batches). Both tests here failed on 71f840a (the second passed before
// 8328245, the first failed there the other way round); fixed since:
// decideDue judges a paused job's owed times against the advance's T, as
// sendOwed does.

// adv42PauseWorld: j (every 1s from 10:00:01, skip, grace 3s) and two
// fire_all fillers a, b (keys before j: the pass handles them first).
// A pause of j with ts 10:00:05.500 (ahead of the shard: the clock's
// advances lag) is consumed at one of three moments around the advance
// to A = 10:00:10 (the clock jumped 10 s: every time of j up to the
// pause is more than 3 s before A, so A's pass skips them all):
//
//	when 0: before the pass to A begins (the shard's time 10:00:00);
//	when 1: during the pass, after its first chunk (cursor at a's entry,
//	        j ahead of it: the pass under way has yet to reach j);
//	when 2: after the pass to A completed.
//
// docs/topics.md: "fires the job owed at or before ts that are not
// dispatched yet ... still go out, planned as the pass that would reach
// them plans them: the advance under way if it has yet to reach the job,
// else the first advance waiting for it at or after them; each time late
// or not against that advance's time (a time its misfire policy skips
// there is not sent by the pause either)". In all three, the pass that
// reaches j's times 10:00:01 .. 10:00:05 is the one to A.
func adv42PauseWorld(t *testing.T, when int) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	h.command("j", adv41Base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":1}}}`)
	pause := func() {
		h.command("j", adv41Base.Add(5500*time.Millisecond), `{"v":1,"op":"pause"}`)
	}
	if when == 0 {
		pause()
	}
	A := adv41Base.Add(10 * time.Second)
	h.advance(A)
	require.NotEmpty(t, h.loops, "the pass to A yielded")
	if when == 1 {
		sh := h.shard()
		require.True(t, sh.Advancing.Equal(A), "%+v", sh)
		require.NotEqual(t, "j", sh.PassKey, "the pass has yet to reach j: %+v", sh)
		pause()
	}
	h.drain()
	if when == 2 {
		require.True(t, h.shard().Watermark.Equal(A))
		pause()
	}
	h.advance(A.Add(5 * time.Second))
	h.drain()
	h.requireOnePayload()
	return h
}

// TestAdversary42PauseBeforePassJudgedAgainstPauseNotAdvance: promise
// (docs/topics.md, above; the brief: a fire's fate must not depend on
// whether a command was consumed during a pass or not). A pause consumed
// during the pass to A, or after it, leaves j's 10:00:01 .. 10:00:05
// skipped (late against A = 10:00:10, as the pass judges them). The same
// pause consumed just before that pass begins makes the pass send
// 10:00:03, 10:00:04, 10:00:05: decideDue plans a paused job's owed times
// with t = earlier(T, NotBefore) and the plain grace, i.e. judged against
// the pause's ts (10:00:05.500), not against the advance's time as the
// pass under way (71f840a's passOf/graceAt) and the docs do.
func TestAdversary42PauseBeforePassJudgedAgainstPauseNotAdvance(t *testing.T) {
	t.Parallel()
	var got [3][]adv41Fire
	for when := 0; when < 3; when++ {
		got[when] = adv41Fires(t, adv42PauseWorld(t, when), "j")
		t.Logf("pause %s: %s", []string{"before the pass", "during the pass", "after the pass"}[when], adv41String(got[when]))
	}
	// Only the times at or before the pause's ts: after the pass, the
	// pause is late and the pass has sent 10:00:07 .. 10:00:10 already.
	upTo := func(fs []adv41Fire) []string {
		var out []string
		for _, s := range adv41Times(fs) {
			if s <= "10:00:05.500" {
				out = append(out, s)
			}
		}
		return out
	}
	require.Equal(t, upTo(got[2]), upTo(got[1]), "during vs after the pass")
	require.Equal(t, upTo(got[1]), upTo(got[0]),
		"a pause consumed before the pass to 10:00:10 began sent times that pass skips when the pause comes during or after it")
}

// adv42TryAdvance delivers the advance to at once and returns its error
// (its loopbacks are kept only when it succeeds).
func adv42TryAdvance(h *partitionHarness, at time.Time) error {
	h.now = at
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.ShardTriggers(), key: h.shardKey(), table: h.st, ts: at, offset: h.off, ctx: context.Background()}
	err := ctx.run(h.s.onTrigger, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: at}))
	if err == nil {
		for _, o := range ctx.outs {
			if o.Kind == simOutLoop {
				h.loops = append(h.loops, o)
			}
		}
	}
	return err
}

// adv42OpenPassWorld: j (every 1s, skip, grace 3s) paused with ts
// 10:00:05.500 while the shard is at 10:00:00: it owes 10:00:01 ..
// 10:00:05. The advance to A = 10:00:10 begins (PassOpen written), and its
// first produce fails: the partition restarts. resumeFirst: a resume of j
// (ts 10:00:10) is consumed before the advance is delivered again (goka
// consumes chronos-jobs and chronos-shard-triggers independently); else
// after the pass to A completed.
func adv42OpenPassWorld(t *testing.T, resumeFirst bool) *partitionHarness {
	h, fp := adv41FlakyHarness(t, 1)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	h.command("j", adv41Base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"skip","misfire_grace":"3s","payload":{"j":1}}}`)
	h.command("j", adv41Base.Add(5500*time.Millisecond), `{"v":1,"op":"pause"}`)
	A := adv41Base.Add(10 * time.Second)
	fp.fail, fp.calls = true, 0
	require.Error(t, adv42TryAdvance(h, A), "the pass's first produce failed")
	fp.fail = false
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(A) && sh.PassOpen, "the pass to A is open: %+v", sh)
	resume := func() { h.command("j", A, `{"v":1,"op":"resume"}`) }
	if resumeFirst {
		resume()
	}
	h.advance(A) // delivered again
	h.drain()
	if !resumeFirst {
		resume()
	}
	h.advance(A.Add(5 * time.Second))
	h.drain()
	h.requireOnePayload()
	return h
}

// TestAdversary42ResumeDuringOpenPassSkipsPausedOwedFires: promise
// (docs/topics.md: a job's owed fires from before its pause "still go
// out"; the exception for a pass that "may have reached" the job: the
// command "first dispatches the job's times up to the advance's time, as
// if the advance had reached the job before"; docs/reliability.md: a
// failed produce may repeat fires, never lose them; the brief: no fire
// lost). The pass to A, delivered again, sends j's 10:00:03 .. 10:00:05
// (decideDue judges a paused job's owed times against its pause,
// 10:00:05.500). A resume consumed between the failed delivery and the
// next goes through pausedHandled -> sendOwed, which since 8328245 judges
// them against the pass's T (graceAt, ref A = 10:00:10): all late,
// skipped, and the record handled through the pause, so the pass sends
// none of them either: three fires lost to a failed produce and a command
// consumed ahead of the redelivery.
func TestAdversary42ResumeDuringOpenPassSkipsPausedOwedFires(t *testing.T) {
	t.Parallel()
	ctrl := adv41Fires(t, adv42OpenPassWorld(t, false), "j")
	got := adv41Fires(t, adv42OpenPassWorld(t, true), "j")
	t.Logf("resume after the pass:        %s", adv41String(ctrl))
	t.Logf("resume before the redelivery: %s", adv41String(got))
	upTo := func(fs []adv41Fire) []string {
		var out []string
		for _, s := range adv41Times(fs) {
			if s <= "10:00:05.500" {
				out = append(out, s)
			}
		}
		return out
	}
	require.Equal(t, upTo(ctrl), upTo(got), "j's times owed from before its pause")
}
