package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"context"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv45Harness is adv41FlakyHarness with ChunkBytes 1 (one event a batch
// in sendOwed for jobs whose payload holds adv45Pad) and chunk size 1.
var adv45Pad = `"pad":"` + strings.Repeat("x", 1000) + `",`

func adv45Harness(t *testing.T, every int) (*partitionHarness, *adv41FlakyProducer) {
	h := &partitionHarness{t: t, prod: &recordingProducer{}, now: adv41Base, chunk: 1, budget: time.Nanosecond}
	fp := &adv41FlakyProducer{inner: h.prod, every: every}
	h.s, h.st = openPartition(t, Config{ChunkSize: 1, ChunkBytes: 1024, ChunkBudget: time.Nanosecond, Producer: fp, Now: func() time.Time { return h.now }})
	return h, fp
}

// adv45ByFireID: scheduled time -> payloads seen (job id).
func adv45ByFireID(t *testing.T, h *partitionHarness, id string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, m := range h.prod.msgs {
		d, err := codecs.DecodeDispatch(m.Value)
		require.NoError(t, err)
		if d.JobID != id || d.Trigger != codecs.TriggerSchedule {
			continue
		}
		k := d.ScheduledAt.UTC().Format("15:04:05.000")
		if out[k] == nil {
			out[k] = map[string]bool{}
		}
		out[k][string(d.Payload)] = true
	}
	return out
}

func adv45Keys(m map[string]map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// adv45SegWorld: fillers a, b make the pass to T1 yield after a; j (job
// js1) is ahead of the cursor; n-1 advances queue; then cmd on j at ts,
// delivered until it applies under a producer failing every failEvery-th
// call (0: never), the pass's loopbacks consumed between failed
// deliveries when drainBetween.
func adv45SegWorld(t *testing.T, failEvery int, drainBetween bool, n int, js1, cmd string, ts time.Time) *partitionHarness {
	h, fp := adv45Harness(t, failEvery)
	h.advance(adv41Base)
	h.drain()
	filler := `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}}`
	h.command("a", adv41Base, filler)
	h.command("b", adv41Base, filler)
	h.command("j", adv41Base, js1)
	h.advance(adv41Base.Add(time.Second))
	require.Len(t, h.loops, 1, "the pass to T1 yielded")
	for i := 2; i <= n; i++ {
		h.advance(adv41Base.Add(time.Duration(i) * time.Second))
	}
	fp.fail, fp.calls = failEvery > 0, 0
	applied := false
	for d := 0; d < 200; d++ {
		if err := adv41TryCommand(h, "j", ts, cmd); err == nil {
			applied = true
			break
		}
		if drainBetween {
			adv45TryLoop(h)
		}
	}
	require.True(t, applied, "the command never applied")
	fp.fail = false
	h.drain()
	h.advance(adv41Base.Add(time.Duration(n+5) * time.Second))
	h.drain()
	return h
}

func adv45CheckOnePayload(t *testing.T, m map[string]map[string]bool) {
	t.Helper()
	for k, ps := range m {
		if len(ps) > 1 {
			t.Errorf("fire at %s dispatched with %d payloads: %v", k, len(ps), ps)
		}
	}
}

func adv45Run(t *testing.T, js1, cmd string, n int) {
	ts := adv41Base.Add(time.Duration(n)*time.Second + 300*time.Millisecond)
	ctrl := adv45ByFireID(t, adv45SegWorld(t, 0, false, n, js1, cmd, ts), "j")
	adv45CheckOnePayload(t, ctrl)
	for _, every := range []int{2, 3, 5} {
		for _, drain := range []bool{false, true} {
			got := adv45ByFireID(t, adv45SegWorld(t, every, drain, n, js1, cmd, ts), "j")
			adv45CheckOnePayload(t, got)
			require.Equal(t, adv45Keys(ctrl), adv45Keys(got), "every %d drain %v: the scheduled times sent differ from the run without faults", every, drain)
			for k, ps := range ctrl {
				require.Equal(t, ps, got[k], "every %d drain %v: payload of %s", every, drain, k)
			}
		}
	}
	t.Logf("control: %v", adv45Keys(ctrl))
}

// TestAdversary45JitteredUpdateAcrossSegmentsUnderFaults: a jittered job
// owing times across the pass under way and queued advances, updated under
// producer faults: the same fires, one payload each.
func TestAdversary45JitteredUpdateAcrossSegmentsUnderFaults(t *testing.T) {
	js := func(p int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","jitter":"400ms","misfire_policy":"fire_all","misfire_grace":"168h","payload":{`+adv45Pad+`"j":%d}}}`, p)
	}
	adv45Run(t, js(1), js(2), 8)
}

func TestAdversary45JitteredPauseAcrossSegmentsUnderFaults(t *testing.T) {
	js := `{"v":1,"op":"put","job":{"every":"1s","jitter":"400ms","misfire_policy":"fire_all","misfire_grace":"168h","payload":{` + adv45Pad + `"j":1}}}`
	adv45Run(t, js, `{"v":1,"op":"pause"}`, 8)
}

func TestAdversary45SkipGraceUpdateAcrossSegmentsUnderFaults(t *testing.T) {
	js := func(p int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","jitter":"400ms","misfire_policy":"skip","misfire_grace":"2s","payload":{`+adv45Pad+`"j":%d}}}`, p)
	}
	adv45Run(t, js(1), js(2), 8)
}

func TestAdversary45FireOnceUpdateAcrossSegmentsUnderFaults(t *testing.T) {
	js := func(p int) string {
		return fmt.Sprintf(`{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_once","misfire_grace":"1s","payload":{`+adv45Pad+`"j":%d}}}`, p)
	}
	adv45Run(t, js(1), js(2), 8)
}

// adv45TryLoop delivers the oldest loopback once; it stays queued if the
// delivery fails (the partition restarts and consumes it again).
func adv45TryLoop(h *partitionHarness) {
	if len(h.loops) == 0 {
		return
	}
	l := h.loops[0]
	h.off++
	ctx := &simCtx{topic: h.s.cfg.Layout.SchedulerLoop(), key: l.Key, table: h.st, ts: h.now, offset: h.off, ctx: context.Background()}
	if err := ctx.run(h.s.onLoop, l.Value); err != nil {
		return
	}
	h.loops = h.loops[1:]
	for _, o := range ctx.outs {
		if o.Kind == simOutLoop {
			h.loops = append(h.loops, o)
		}
	}
}
