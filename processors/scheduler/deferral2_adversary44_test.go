package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv44Gen: j is put late with ts W-behind (job spec js), pause(s) at
// pauseTS (zero: none) before the next advance, then between, then the
// advances W+step*i for i in 1..n.
func adv44Gen(t *testing.T, js string, behind time.Duration, pauseTS time.Time, between func(h *partitionHarness), step time.Duration, n int) *partitionHarness {
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, adv41Base)
	h.advance(adv41Base)
	h.drain()
	h.command("j", adv41Base.Add(-behind), fmt.Sprintf(`{"v":1,"op":"put","job":%s}`, js))
	if !pauseTS.IsZero() {
		h.command("j", pauseTS, `{"v":1,"op":"pause"}`)
	}
	if between != nil {
		between(h)
	}
	for i := 1; i <= n; i++ {
		h.advance(adv41Base.Add(time.Duration(i) * step))
		h.drain()
	}
	h.requireOnePayload()
	return h
}

func adv44Record(t *testing.T, h *partitionHarness, id string) *codecs.JobRecord {
	v, err := h.st.Get(id)
	require.NoError(t, err)
	r, err := codecs.DecodeJobRecord(v)
	require.NoError(t, err)
	return r
}

// TestAdversary44FireAllOver100Paused: 150 owed times of a fire_all job
// (grace 168h) behind the watermark, paused before the next advance: at
// most 100 per advance, every one of the 150 eventually (up to the pause).
func TestAdversary44FireAllOver100Paused(t *testing.T) {
	js := `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}`
	for _, pause := range []bool{false, true} {
		var pts time.Time
		if pause {
			pts = adv41Base
		}
		h := adv44Gen(t, js, 150*time.Second, pts, nil, time.Second, 4)
		got := adv43UpTo(adv41Fires(t, h, "j"), "10:00:00.000")
		t.Logf("pause %v: %d owed times sent (first %v last %v); record %+v", pause, len(got), got[0], got[len(got)-1], *adv44Record(t, h, "j"))
		if len(got) != 150 {
			t.Errorf("pause %v: %d of the 150 owed times sent", pause, len(got))
		}
	}
}

// TestAdversary44FireAllOver100PausedThenResume: same, and a resume after
// the first advance (which sent 100): the other 50 still go out.
func TestAdversary44FireAllOver100PausedThenResume(t *testing.T) {
	js := `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}`
	h := adv44Gen(t, js, 150*time.Second, adv41Base, func(h *partitionHarness) {
		h.advance(adv41Base.Add(time.Second))
		h.drain()
		t.Logf("after the first advance: %d sent; record %+v", len(adv41Fires(t, h, "j")), *adv44Record(t, h, "j"))
		h.command("j", adv41Base.Add(1500*time.Millisecond), `{"v":1,"op":"resume"}`)
	}, time.Second, 4)
	got := adv43UpTo(adv41Fires(t, h, "j"), "10:00:00.000")
	t.Logf("%d owed times sent", len(got))
	require.Len(t, got, 150)
}

// TestAdversary44PausedAtJob: a one-shot at job late behind the watermark,
// paused before the next advance: its one time goes out once.
func TestAdversary44PausedAtJob(t *testing.T) {
	js := fmt.Sprintf(`{"at":%q,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":1}}`, adv41Base.Add(-5*time.Second).Format(time.RFC3339))
	for _, c := range []struct {
		name    string
		between func(h *partitionHarness)
	}{
		{"pause", nil},
		{"pause+resume", func(h *partitionHarness) {
			h.command("j", adv41Base.Add(500*time.Millisecond), `{"v":1,"op":"resume"}`)
		}},
		{"pause+put", func(h *partitionHarness) {
			h.command("j", adv41Base.Add(500*time.Millisecond), fmt.Sprintf(`{"v":1,"op":"put","job":{"at":%q,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"a":2}}}`, adv41Base.Add(-5*time.Second).Format(time.RFC3339)))
		}},
	} {
		h := adv44Gen(t, js, 10*time.Second, adv41Base, c.between, time.Second, 3)
		got := adv41Fires(t, h, "j")
		t.Logf("%s: %s record %+v", c.name, adv41String(got), *adv44Record(t, h, "j"))
		if len(got) != 1 {
			t.Errorf("%s: the at job's one time went out %d times", c.name, len(got))
		}
	}
}

// TestAdversary44PausedMaxFires: max_fires 5, 10 owed times behind the
// watermark, paused before the next advance: 5 go out, then resume: none
// more.
func TestAdversary44PausedMaxFires(t *testing.T) {
	js := `{"every":"1s","max_fires":5,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"l":1}}`
	h := adv44Gen(t, js, 10*time.Second, adv41Base, func(h *partitionHarness) {
		h.advance(adv41Base.Add(time.Second))
		h.drain()
		h.command("j", adv41Base.Add(1500*time.Millisecond), `{"v":1,"op":"resume"}`)
	}, time.Second, 4)
	got := adv41Fires(t, h, "j")
	t.Logf("%s record %+v", adv41String(got), *adv44Record(t, h, "j"))
	require.Len(t, got, 5)
}

// TestAdversary44PauseBeforeWatermarkThenResume: the pause's ts is behind
// the watermark (09:59:55): times 09:59:51..55 owed, then a resume.
func TestAdversary44PauseBeforeWatermarkThenResume(t *testing.T) {
	js := `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}`
	for _, resume := range []bool{false, true} {
		var between func(h *partitionHarness)
		if resume {
			between = func(h *partitionHarness) {
				h.command("j", adv41Base.Add(500*time.Millisecond), `{"v":1,"op":"resume"}`)
			}
		}
		h := adv44Gen(t, js, 10*time.Second, adv41Base.Add(-5*time.Second), between, time.Second, 3)
		got := adv41Fires(t, h, "j")
		t.Logf("resume %v: %s", resume, adv41String(got))
		if g := adv43UpTo(got, "09:59:55.000"); len(g) != 5 {
			t.Errorf("resume %v: owed before the pause sent %v", resume, g)
		}
	}
}
