package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv26CutSettleInFlightThenPausePutTwoPayloads is simulation seed
// 5100091 x 1500 (-sim.crashkeep, adversary round 26) as a history: a job
// cut at its per-advance bound records how far the pass got (a settle:
// Through, no OwedAt); the pass's continuation sends the rest and
// completes, moving the watermark to T, and the job's last settle, which
// says so, is still in flight when the partition moves to a new owner (a
// clean rebalance: its store is restored from the table). The table then
// said the job was handled only through the cut, so the new owner's due
// index had it owing every time from the cut to T; a late pause kept
// them owed, and a put on the paused job owed them again under its own
// payload ("no fire_id is ever dispatched with two different payloads",
// docs/topics.md), once an update made it send what it owed. Before the
// fix (codecs.JobRecord.owedThrough): 18 fire_ids with two payloads.
func TestAdv26CutSettleInFlightThenPausePutTwoPayloads(t *testing.T) {
	t.Parallel()
	h := adv24Harness(t)
	pad := strings.Repeat("p", 200)
	h.command("j", adv24Base, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"A`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	T := adv24Base.Add(20 * time.Second)
	h.advance(T) // fires j@10:00:01, 10:00:02; cut; yields
	require.Len(t, h.shard().PassCuts, 1, "setup: the job is cut")
	h.deliverLoops("j") // the cut's settle: Through 10:00:02.999, no OwedAt
	// The continuations, until the pass completes; j's later settles stay
	// in flight.
	for i := 0; !h.shard().Advancing.IsZero(); i++ {
		require.Less(t, i, 100, "setup: the pass completes")
		h.deliverLoops(h.shardKey())
	}
	require.Equal(t, T, h.shard().Watermark)
	sent := len(h.fired())
	require.Equal(t, 20, sent, "setup: the pass sent j@10:00:01 .. 10:00:20")
	adv24Restore(h, "j") // a clean rebalance: the new owner restores the table
	h.command("j", adv24Base, `{"v":1,"op":"pause"}`)
	h.command("j", adv24Base, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"B`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	// An update: it first sends, under B, what B owes up to the shard's
	// time.
	h.command("j", T, `{"v":1,"op":"put","job":{"every":"1s","payload":{"p":"C`+pad+`"},"misfire_policy":"fire_all","misfire_grace":"168h"}}`)
	h.drain()
	for _, at := range []time.Time{T.Add(5 * time.Second), T.Add(10 * time.Second)} {
		h.advance(at)
		h.drain()
	}
	h.requireOnePayload()
	fired := h.fired()
	for i := 1; i <= 30; i++ {
		id := "j@" + adv24Base.Add(time.Duration(i)*time.Second).Format(time.RFC3339)
		require.NotEmpty(t, fired[id], "%s never dispatched", id)
	}
}
