package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv28Def is job i's definition in adversary round 28's mixes.
func adv28Def(mix string, i int) string {
	pay := strings.Repeat("x", 200)
	switch mix {
	case "plain":
		return `{"every":"20s"}`
	case "cuts":
		if i%2 == 1 {
			return `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"` + pay + `"}}`
		}
		return `{"every":"20s"}`
	}
	if mix == "limit" {
		switch i % 3 {
		case 0:
			return `{"every":"1s","max_fires":5,"misfire_policy":"fire_all","misfire_grace":"168h","payload":{"l":1}}`
		case 1:
			return `{"every":"20s","max_fires":1}`
		}
		return fmt.Sprintf(`{"at":%q,"payload":{"a":%d}}`, adv24Base.Add(20*time.Second).Format(time.RFC3339), i)
	}
	if mix == "far" {
		switch i % 3 {
		case 0:
			return `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"f":1}}`
		case 1:
			return `{"every":"5s","payload":{"g":1}}`
		}
		return `{"cron":"*/2 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","jitter":"1s","payload":{"c":"` + strings.Repeat("c", 100) + `"}}`
	}
	// "mix"
	switch i % 6 {
	case 0:
		return `{"every":"20s"}`
	case 1:
		if i < 100 { // at most ~17 cut jobs: PassCuts kept
			return `{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"` + pay + `"}}`
		}
		return `{"every":"3s"}`
	case 2:
		return `{"cron":"*/4 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"c":1}}`
	case 3:
		return `{"every":"7s","jitter":"3s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"j":1}}`
	case 4:
		return fmt.Sprintf(`{"at":%q,"misfire_policy":"fire_all","misfire_grace":"1h","payload":{"a":%d}}`, adv24Base.Add(time.Duration(5+i%15)*time.Second).Format(time.RFC3339), i)
	default:
		return `{"every":"2s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p5":1}}`
	}
}

// adv28Opts drives adv28Run.
type adv28Opts struct {
	mix      string
	n        int
	k1, k2   int  // callbacks before the 61 advances, then before the handover
	handover bool // clean handover after k2 callbacks
	crash    bool // the handover is a crash: the last callback's table writes lost
	rAt      string
	pre      func(h *partitionHarness) // before the pass (after the puts)
	during   func(h *partitionHarness) // on the old owner just before the handover
	hook     func(h *partitionHarness, phase string, step int)
	resend   bool
	span     time.Duration // the pass's T after base (0: 20s)
}

// adv28Run: o.n jobs of o.mix put at base, an optional pre step, the pass
// to T=base+20s one chunk per callback; after k1 loop deliveries, 61
// advances make the continuation be sent again (R, held); after k2 more
// loop deliveries, a clean handover (or none); R delivered when the new
// owner is in phase rAt ("first", "restore", "loop", "rederive", "end").
// Then two more advances.
func adv28Run(t *testing.T, o adv28Opts) (*partitionHarness, map[string][]string) {
	h := adv24Harness(t)
	keys := adv27Keys(o.n)
	for i, k := range keys {
		h.command(k, adv24Base, `{"v":1,"op":"put","job":`+adv28Def(o.mix, i)+`}`)
	}
	h.drain()
	if o.pre != nil {
		o.pre(h)
		h.drain()
	}
	T := adv24Base.Add(20 * time.Second)
	if o.span != 0 {
		T = adv24Base.Add(o.span)
	}
	h.advance(T)
	pop := func() simOut { l := h.loops[0]; h.loops = h.loops[1:]; return l }
	run := func(l simOut) { h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value) }
	for i := 0; i < o.k1 && len(h.loops) > 0; i++ {
		run(pop())
	}
	var R *simOut
	if o.resend && !h.shard().Advancing.IsZero() {
		n := len(h.loops)
		for i := 1; i <= 61; i++ {
			a := T.Add(time.Duration(i) * 100 * time.Millisecond)
			h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), a, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: a}))
		}
		if len(h.loops) == n+1 {
			r := h.loops[n]
			h.loops = h.loops[:n]
			R = &r
		}
	}
	var saved map[string][]byte
	var last simOut
	for i := 0; i < o.k2 && len(h.loops) > 0; i++ {
		if o.crash && i == o.k2-1 {
			saved = adv28Snapshot(h, keys)
		}
		last = pop()
		run(last)
	}
	if o.during != nil {
		o.during(h)
	}
	phases := []string{}
	if o.handover && !h.shard().Advancing.IsZero() {
		if o.crash && saved != nil {
			// The last callback's table writes lost; its loopbacks and
			// dispatches kept; the input it consumed is consumed again.
			adv28RestoreFrom(h, keys, saved)
			h.loops = append([]simOut{last}, h.loops...)
		} else {
			adv24Restore(h, keys...)
		}
	}
	for steps := 0; len(h.loops) > 0 || R != nil; steps++ {
		require.Less(t, steps, 100000)
		phase := adv27Phase(h)
		phases = append(phases, phase)
		if R != nil && (o.rAt == "first" || phase == o.rAt || len(h.loops) == 0) {
			r := *R
			R = nil
			run(r)
			continue
		}
		run(pop())
		if o.hook != nil {
			o.hook(h, adv27Phase(h), steps)
		}
	}
	t.Logf("phases after handover: %s", adv28Compact(phases))
	require.True(t, h.shard().Advancing.IsZero(), "the pass never completed: %+v", h.shard())
	for _, at := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
		h.advance(at)
		h.drain()
		require.True(t, h.shard().Advancing.IsZero(), "stuck: %+v", h.shard())
	}
	return h, h.fired()
}

func adv28Compact(phases []string) string {
	var out []string
	for i := 0; i < len(phases); {
		j := i
		for j < len(phases) && phases[j] == phases[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%q x%d", phases[i], j-i))
		i = j
	}
	return strings.Join(out, ",")
}

func adv28Snapshot(h *partitionHarness, keys []string) map[string][]byte {
	vals := map[string][]byte{}
	for _, k := range append([]string{h.shardKey()}, keys...) {
		v, err := h.st.Get(k)
		require.NoError(h.t, err)
		vals[k] = append([]byte(nil), v...)
	}
	return vals
}

func adv28RestoreFrom(h *partitionHarness, keys []string, vals map[string][]byte) {
	adv24Open(h)
	require.NoError(h.t, h.st.Set(h.shardKey(), vals[h.shardKey()]))
	for _, k := range keys {
		if vals[k] != nil {
			require.NoError(h.t, h.st.Set(k, vals[k]))
		}
	}
}

// adv28Check compares got with ctrl: nothing lost, nothing extra, one
// payload per fire_id, and (dupsOK false) nothing repeated.
func adv28Check(t *testing.T, h *partitionHarness, ctrl, got map[string][]string, dupsOK bool) {
	t.Helper()
	adv28Compare(t, h, ctrl, got, dupsOK, nil)
}

// adv28Compare is adv28Check with the fire_ids except says (nil: none)
// allowed to be lost or extra.
func adv28Compare(t *testing.T, h *partitionHarness, ctrl, got map[string][]string, dupsOK bool, except func(id string) bool) {
	t.Helper()
	h.requireOnePayload()
	onlyCtrl, onlyGot := adv27Diff(ctrl, got)
	if except != nil {
		onlyCtrl, onlyGot = slices.DeleteFunc(onlyCtrl, except), slices.DeleteFunc(onlyGot, except)
	}
	require.Empty(t, onlyCtrl, "lost fires (only in got: %v)", onlyGot)
	require.Empty(t, onlyGot, "fires the control never sent")
	if !dupsOK {
		d := adv27Dups(got)
		require.Empty(t, d, "%d fire_ids repeated after a clean handover", len(d))
	}
	adv27RequireDerived(t, h)
}

// TestAdv28ResendMix: the resent continuation after a clean handover with
// a mix of job kinds (cut fire_all jobs, cron, jitter, at, 2s), R at every
// phase, the handover at several points of the pass.
func TestAdv28ResendMix(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, mix := range []string{"plain", "cuts", "mix"} {
		ks := [][2]int{{1, 3}, {3, 10}, {5, 25}, {2, 32}, {2, 36}}
		if mix != "plain" {
			ks = append(ks, [2]int{2, 80}, [2]int{30, 300})
		}
		for _, k := range ks {
			for _, rAt := range []string{"first", "restore", "loop", "rederive", "end"} {
				m.run(t, fmt.Sprintf("%s/k=%v/%s", mix, k, rAt), func(t *testing.T) {
					o := adv28Opts{mix: mix, n: 400, k1: k[0], k2: k[1], resend: true, rAt: rAt}
					_, ctrl := adv28Run(t, o)
					o.handover = true
					h, got := adv28Run(t, o)
					adv28Check(t, h, ctrl, got, false)
				})
			}
		}
	}
}

// TestAdv28CrashMix: the handover is a crash that lost the table writes of
// the old owner's last callback (its dispatches and loopbacks kept, its
// input consumed again), with the continuation sent twice: fires may
// repeat, never with two payloads, none lost.
func TestAdv28CrashMix(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, mix := range []string{"plain", "cuts", "mix"} {
		ks := [][2]int{{1, 3}, {3, 10}, {5, 25}, {2, 32}, {2, 36}}
		if mix != "plain" {
			ks = append(ks, [2]int{2, 80}, [2]int{30, 300})
		}
		for _, k := range ks {
			for _, rAt := range []string{"first", "restore", "loop", "end"} {
				m.run(t, fmt.Sprintf("%s/k=%v/%s", mix, k, rAt), func(t *testing.T) {
					o := adv28Opts{mix: mix, n: 400, k1: k[0], k2: k[1], resend: true, rAt: rAt}
					if mix == "mix" {
						o.pre = adv28PrePause
					}
					_, ctrl := adv28Run(t, o)
					o.handover, o.crash = true, true
					h, got := adv28Run(t, o)
					adv28Check(t, h, ctrl, got, true)
				})
			}
		}
	}
}

// TestAdv28SecondHandoverMix: a second clean handover after the s-th
// callback of the new owner (in its restore, or its fan-out), the
// continuation sent twice.
func TestAdv28SecondHandoverMix(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, mix := range []string{"plain", "mix"} {
		for _, k := range [][2]int{{2, 32}, {2, 36}, {5, 25}, {2, 80}} {
			for _, s := range []int{0, 1, 2, 4} {
				for _, rAt := range []string{"first", "restore", "loop", "end"} {
					m.run(t, fmt.Sprintf("%s/k=%v/%d/%s", mix, k, s, rAt), func(t *testing.T) {
						o := adv28Opts{mix: mix, n: 400, k1: k[0], k2: k[1], resend: true, rAt: rAt}
						if mix == "mix" {
							o.pre = adv28PrePause
						}
						_, ctrl := adv28Run(t, o)
						o.handover = true
						done := false
						o.hook = func(h *partitionHarness, phase string, step int) {
							if !done && step == s && !h.shard().Advancing.IsZero() {
								adv24Restore(h, adv27Keys(o.n)...)
								done = true
							}
						}
						h, got := adv28Run(t, o)
						adv28Check(t, h, ctrl, got, false)
					})
				}
			}
		}
	}
}

// TestAdv28FarPass: a pass whose T is 10 minutes after the jobs' entries
// (hundreds of fires per job, cut by the chunks' bytes, within PassCuts),
// the continuation sent twice, a clean handover or a crash at several
// points.
func TestAdv28FarPass(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, crash := range []bool{false, true} {
		for _, k := range [][2]int{{1, 3}, {3, 30}, {10, 200}, {50, 1000}} {
			for _, rAt := range []string{"first", "loop", "end"} {
				m.run(t, fmt.Sprintf("crash=%v/k=%v/%s", crash, k, rAt), func(t *testing.T) {
					o := adv28Opts{mix: "far", n: 45, k1: k[0], k2: k[1], resend: true, rAt: rAt, span: 10 * time.Minute}
					_, ctrl := adv28Run(t, o)
					o.handover, o.crash = true, crash
					h, got := adv28Run(t, o)
					adv28Check(t, h, ctrl, got, crash)
				})
			}
		}
	}
}

// TestAdv28LimitedJobs: jobs with a fire limit and one-shot jobs, all
// completing during the pass, the continuation sent twice, a clean
// handover or a crash.
func TestAdv28LimitedJobs(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, crash := range []bool{false, true} {
		for _, k := range [][2]int{{1, 3}, {3, 12}, {2, 30}, {2, 60}} {
			for _, rAt := range []string{"first", "restore", "loop", "end"} {
				m.run(t, fmt.Sprintf("crash=%v/k=%v/%s", crash, k, rAt), func(t *testing.T) {
					o := adv28Opts{mix: "limit", n: 300, k1: k[0], k2: k[1], resend: true, rAt: rAt}
					_, ctrl := adv28Run(t, o)
					o.handover, o.crash = true, crash
					h, got := adv28Run(t, o)
					adv28Check(t, h, ctrl, got, crash)
				})
			}
		}
	}
}
