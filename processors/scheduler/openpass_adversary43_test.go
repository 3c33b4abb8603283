package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv43OpenPassWorld is adv42OpenPassWorld with j's policy and grace and
// the command (resume, put, or delete then put) consumed either before the
// failed pass to A = 10:00:10 is delivered again (first) or after it
// completed.
func adv43OpenPassWorld(t *testing.T, first bool, policy string, grace time.Duration, op string) *partitionHarness {
	h, fp := adv41FlakyHarness(t, 1)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	put := func(p int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"%s","misfire_grace":"%s","payload":{"j":%d}}}`, policy, grace, p)
	}
	h.command("j", adv41Base, put(1))
	h.command("j", adv41Base.Add(5500*time.Millisecond), `{"v":1,"op":"pause"}`)
	A := adv41Base.Add(10 * time.Second)
	fp.fail, fp.calls = true, 0
	require.Error(t, adv42TryAdvance(h, A), "the pass's first produce failed")
	fp.fail = false
	sh := h.shard()
	require.True(t, sh.Advancing.Equal(A) && sh.PassOpen, "the pass to A is open: %+v", sh)
	cmd := func() {
		switch op {
		case "resume":
			h.command("j", A, `{"v":1,"op":"resume"}`)
		case "put":
			h.command("j", A, put(2))
		case "delete":
			h.command("j", A, `{"v":1,"op":"delete"}`)
			h.command("j", adv41Base.Add(2*time.Second), put(3))
		}
	}
	if first {
		cmd()
	}
	h.advance(A) // delivered again
	h.drain()
	if !first {
		cmd()
	}
	h.advance(A.Add(5 * time.Second))
	h.drain()
	h.advance(A.Add(10 * time.Second))
	h.drain()
	h.requireOnePayload()
	return h
}

// TestAdversary43OpenPassCommandOrder: promise (docs/reliability.md: a
// failed produce may repeat fires, never lose them; da9026b: a fire's
// fate must not depend on whether a pause/resume was consumed before,
// during or after a pass; no fire_id with two payloads): j's owed times
// from before its pause (10:00:01 .. 10:00:05) get the same fate whether
// the command is consumed before the failed pass is delivered again or
// after it completed.
func TestAdversary43OpenPassCommandOrder(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"resume", "put"} {
		for _, policy := range []string{"skip", "fire_once", "fire_all"} {
			for _, grace := range []time.Duration{0, 3 * time.Second, 7 * time.Second, 168 * time.Hour} {
				ctrl := adv41Fires(t, adv43OpenPassWorld(t, false, policy, grace, op), "j")
				got := adv41Fires(t, adv43OpenPassWorld(t, true, policy, grace, op), "j")
				c, g := adv43UpTo(ctrl, "10:00:05.500"), adv43UpTo(got, "10:00:05.500")
				if !adv43Same(c, g) || adv41Missed(adv43Before(ctrl, "10:00:05.500")) != adv41Missed(adv43Before(got, "10:00:05.500")) {
					t.Errorf("%s %s %s:\n after: %s\n first: %s", op, policy, grace, adv41String(ctrl), adv41String(got))
				}
			}
		}
	}
}

func adv43Before(fs []adv41Fire, max string) []adv41Fire {
	var out []adv41Fire
	seen := map[string]bool{}
	for _, f := range fs {
		s := f.At.Format("15:04:05.000")
		if s <= max && !seen[s] {
			seen[s] = true
			out = append(out, f)
		}
	}
	return out
}

// TestAdversary43OpenPassDeleteReputOnePayload: a delete of the paused j
// and a late re-put (ts 10:00:02) around the failed pass to A: no fire_id
// goes out with two payloads (docs/topics.md on delete: "a late re-put
// never reuses a fire_id with another payload").
func TestAdversary43OpenPassDeleteReputOnePayload(t *testing.T) {
	t.Parallel()
	for _, first := range []bool{false, true} {
		for _, policy := range []string{"skip", "fire_once", "fire_all"} {
			for _, grace := range []time.Duration{0, 3 * time.Second, 168 * time.Hour} {
				fs := adv41Fires(t, adv43OpenPassWorld(t, first, policy, grace, "delete"), "j")
				t.Logf("first %v %s %s: %s", first, policy, grace, adv41String(fs))
			}
		}
	}
}
