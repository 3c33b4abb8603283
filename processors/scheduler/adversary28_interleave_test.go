package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// adv28Interleave: o.mix jobs, the pass to T; after k1 callbacks 61
// advances send the continuation again (R); R runs on the old owner after
// rOld more callbacks (the two copies interleave there); late puts of new
// cut jobs (n00x, 1s fire_all from base, owing behind the shard's time)
// after lateAt callbacks; after k2 callbacks in all a clean handover (if
// handover). Returns fired.
func adv28Interleave(t *testing.T, mix string, n, k1, rOld, lateAt, k2 int, handover bool) (*partitionHarness, map[string][]string) {
	h := adv24Harness(t)
	keys := adv27Keys(n)
	for i, k := range keys {
		h.command(k, adv24Base, `{"v":1,"op":"put","job":`+adv28Def(mix, i)+`}`)
	}
	h.drain()
	news := []string{"n000", "n001", "n002", "n003"}
	all := append(append([]string{}, keys...), news...)
	T := adv24Base.Add(20 * time.Second)
	h.advance(T)
	pop := func() simOut { l := h.loops[0]; h.loops = h.loops[1:]; return l }
	run := func(l simOut) { h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value) }
	for i := 0; i < k1 && len(h.loops) > 0; i++ {
		run(pop())
	}
	require.False(t, h.shard().Advancing.IsZero())
	cnt := len(h.loops)
	for i := 1; i <= 61; i++ {
		a := T.Add(time.Duration(i) * 100 * time.Millisecond)
		h.deliver(h.s.onTrigger, h.s.cfg.Layout.ShardTriggers(), h.shardKey(), a, codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: a}))
	}
	require.Len(t, h.loops, cnt+1)
	R := h.loops[cnt]
	h.loops = h.loops[:cnt]
	rSent := false
	for i := 0; i < k2 && (len(h.loops) > 0 || !rSent); i++ {
		if i == lateAt {
			for _, k := range news {
				h.command(k, adv24Base, `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+strings.Repeat("n", 200)+`"}}}`)
			}
		}
		if i == rOld || len(h.loops) == 0 {
			if !rSent {
				rSent = true
				run(R)
				continue
			}
		}
		run(pop())
	}
	if handover && !h.shard().Advancing.IsZero() {
		adv24Restore(h, all...)
	} else if handover {
		t.Logf("pass done before the handover")
	}
	if !rSent {
		run(R)
	}
	h.drain()
	require.True(t, h.shard().Advancing.IsZero(), "stuck: %+v", h.shard())
	for _, at := range []time.Time{T.Add(20 * time.Second), T.Add(40 * time.Second)} {
		h.advance(at)
		h.drain()
		require.True(t, h.shard().Advancing.IsZero(), "stuck: %+v", h.shard())
	}
	return h, h.fired()
}

// TestAdv28InterleavedCopies: the two copies of the continuation run
// interleaved on the old owner (with late puts of new cut jobs between),
// then a clean handover: nothing lost or repeated.
func TestAdv28InterleavedCopies(t *testing.T) {
	var m matrixShare
	defer m.flush(t)
	for _, mix := range []string{"cuts", "mix"} {
		for _, k1 := range []int{1} {
			for _, rOld := range []int{0, 1, 3} {
				for _, lateAt := range []int{0, 2} {
					for _, k2 := range []int{5, 12, 30, 60} {
						m.run(t, fmt.Sprintf("%s/%d/%d/%d/%d", mix, k1, rOld, lateAt, k2), func(t *testing.T) {
							_, ctrl := adv28Interleave(t, mix, 200, k1, rOld, lateAt, k2, false)
							h, got := adv28Interleave(t, mix, 200, k1, rOld, lateAt, k2, true)
							adv28Check(t, h, ctrl, got, false)
						})
					}
				}
			}
		}
	}
}
