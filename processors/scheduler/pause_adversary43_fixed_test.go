package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Adversary round 43 (on da9026b): failed there and before 8328245 too.
// Fixed since: a pause leaves the times no announced advance would reach
// owed, for the next advance to plan as a paused job's, against its T.

// adv43LateJobPauseWorld: the shard at W = 10:00:00, no pass under way.
// Filler a (fire_all, 168h) put late with ts 09:59:40 (first time
// 09:59:41) and j (every 1s, policy, grace) put late with ts 09:59:50
// (first time 09:59:51): both owe times behind the watermark, which "go
// out with the next advance". The next advance is to A = W + jump. A pause
// of j with ts W (10:00:00) is consumed:
//
//	when 0: before the advance to A arrives (no pass announced);
//	when 1: during the pass to A, after its first chunk (cursor at a's
//	        entry 09:59:41, j's entry 09:59:51 ahead of it);
//	when 2: after the pass to A completed (the pause is late: nothing).
func adv43LateJobPauseWorld(t *testing.T, when int, policy string, grace, jump time.Duration) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	h.command("a", adv41Base.Add(-20*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`)
	h.command("j", adv41Base.Add(-10*time.Second), fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"%s","misfire_grace":"%s","payload":{"j":1}}}`, policy, grace))
	pause := func() { h.command("j", adv41Base, `{"v":1,"op":"pause"}`) }
	if when == 0 {
		pause()
	}
	A := adv41Base.Add(jump)
	h.advance(A)
	if when == 1 {
		sh := h.shard()
		require.True(t, sh.Advancing.Equal(A), "%+v", sh)
		require.Equal(t, "a", sh.PassKey, "%+v", sh)
		pause()
	}
	h.drain()
	if when == 2 {
		pause()
	}
	h.advance(A.Add(5 * time.Second))
	h.drain()
	h.requireOnePayload()
	return h
}

func adv43UpTo(fs []adv41Fire, max string) []string {
	var out []string
	for _, s := range adv41Times(fs) {
		if s <= max {
			out = append(out, s)
		}
	}
	return out
}

// TestAdversary43LatePauseBeforeAdvanceJudgedAgainstWatermark: promise
// (docs/topics.md: a pause's owed times are "planned as the pass that would
// reach them plans them ... each time late or not against that advance's
// time (a time its misfire policy skips there is not sent by the pause
// either)"; da9026b's rationale: "a fire's fate must not depend on whether
// a pause/resume was consumed before, during or after a pass"). j's times
// behind the watermark are reached by the pass to A. A pause consumed
// during or after that pass leaves them judged against A; the same pause
// consumed just before A arrives has sendOwed send them judged against
// the watermark (passOf: none announced -> until), though a paused record
// could keep them owed for the pass (as da9026b now judges the owed times
// after the watermark).
func TestAdversary43LatePauseBeforeAdvanceJudgedAgainstWatermark(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy      string
		grace, jump time.Duration
	}{
		{"skip", 3 * time.Second, 2 * time.Second},
		{"skip", 0, 2 * time.Second},
		{"fire_once", 3 * time.Second, 2 * time.Second},
		{"fire_all", 3 * time.Second, 2 * time.Second},
	} {
		var got [3][]adv41Fire
		for when := 0; when < 3; when++ {
			got[when] = adv41Fires(t, adv43LateJobPauseWorld(t, when, c.policy, c.grace, c.jump), "j")
			t.Logf("%s grace %s, pause %s: %s", c.policy, c.grace, []string{"before the pass", "during the pass", "after the pass"}[when], adv41String(got[when]))
		}
		lim := "10:00:00.000"
		if c.policy != "fire_once" { // a coalesced fire after the pause's ts differs by design
			require.Equal(t, adv43UpTo(got[2], lim), adv43UpTo(got[1], lim), "%s %s: during vs after", c.policy, c.grace)
		}
		if !adv43Same(adv43UpTo(got[1], lim), adv43UpTo(got[0], lim)) {
			t.Errorf("%s grace %s: a pause consumed before the pass sent %v, during it %v", c.policy, c.grace, adv43UpTo(got[0], lim), adv43UpTo(got[1], lim))
		}
	}
}

func adv43Same(a, b []string) bool { return slices.Equal(a, b) }
