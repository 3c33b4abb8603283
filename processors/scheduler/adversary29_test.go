package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv29CutsLostPausePutTwoPayloads: promise (docs/topics.md, "Delivery
// guarantees"): no fire_id is ever dispatched with two different payloads.
//
// When the pass's cut list overflows (PassCutsLost), passedThrough takes a
// job whose derived entry is behind the cursor as handled only through
// just before the cursor's time, while the pass handled it through T. A
// late pause (ts before the job's next time after the cursor's time), then
// a put, on the new owner after a clean rebalance, owe that time again
// under the put's payload.
//
// History: adversary round 24's (TestAdv24CutsLostCleanRebalanceRepeats):
// a000..a004 cron "3,15 * * * * *" (each sends 10:00:03 and 10:00:15 in one
// plan, handled through T, record unchanged), j000..j069 every 1s cut one by
// one until the yield records PassCutsLost (cursor 10:00:06, j06x). Then a
// clean rebalance to an empty store; there a pause of a000 with ts 10:00:10
// and a put of a000 (payload B) with ts 10:00:11, then the continuation.
//
// Expected: a000@10:00:15 with one payload. Got: A (the pass, before the
// move) and B (after the put).
func TestAdv29CutsLostPausePutTwoPayloads(t *testing.T) {
	t.Parallel()
	base := adv24Base
	h := adv24Harness(t)
	pay := strings.Repeat("x", 200)
	var keys []string
	for i := range 5 {
		k := fmt.Sprintf("a%03d", i)
		keys = append(keys, k)
		h.command(k, base, `{"v":1,"op":"put","job":{"cron":"3,15 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+pay+`"}}}`)
	}
	for i := range 70 {
		k := fmt.Sprintf("j%03d", i)
		keys = append(keys, k)
		h.command(k, base.Add(5*time.Second), `{"v":1,"op":"put","job":{"every":"1s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"`+pay+`"}}}`)
	}
	h.drain()
	T := base.Add(20 * time.Second)
	h.advance(T)
	moved := false
	for len(h.loops) > 0 {
		if sh := h.shard(); !moved && sh.PassCutsLost && len(h.loops) == 1 && h.loops[0].Key == h.shardKey() {
			moved = true
			adv24Restore(h, keys...)
			require.Contains(t, h.fired(), "a000@2026-03-01T10:00:15Z", "sent before the move")
			h.command("a000", base.Add(10*time.Second), `{"v":1,"op":"pause"}`)
			h.command("a000", base.Add(11*time.Second), `{"v":1,"op":"put","job":{"cron":"3,15 * * * * *","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"p":"B"}}}`)
		}
		l := h.loops[0]
		h.loops = h.loops[1:]
		h.deliver(h.s.onLoop, h.s.cfg.Layout.SchedulerLoop(), l.Key, h.now, l.Value)
	}
	require.True(t, moved, "the pass never recorded PassCutsLost")
	h.advance(T.Add(time.Second))
	h.drain()
	h.advance(T.Add(time.Minute))
	h.drain()
	h.requireOnePayload()
}
