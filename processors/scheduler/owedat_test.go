package scheduler

import (
	"testing"
	"time"
)

// TestMoveBeforeSettlePutBeforeSettle is the case docs/reliability.md had
// left open (round 15's seed 7794, 30109 x 3000 operations): an advance
// sends a late job's owed fires and queues the settle that records them;
// the partition moves to an empty store before the settle is consumed
// there; a late pause and then a put on the paused job are consumed there
// *before* the settle (commands and loopbacks are different topics), and
// so is the next advance there. The
// new owner's index is derived from the record the settle had yet to
// reach, but the advance completed past the time the job became owed
// (codecs.JobRecord.OwedAt), so the table already says the job was handled
// through the watermark: the put does not send the fired times again with
// its payload ("no fire_id is ever dispatched with two different
// payloads"), and nothing owed is lost.
func TestMoveBeforeSettlePutBeforeSettle(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 100, base)
	h.advance(base)
	h.drain()
	// A late put: record time 15:50, consumed at 16:00. It owes every
	// minute since 15:50 (grace 168h, fire_all).
	h.command("j", base.Add(-10*time.Minute), `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"put":1}}}`)
	// The next advance sends them (15:51..16:05) and queues the settle.
	h.advance(base.Add(5 * time.Minute))
	sent := h.fired()
	for m := 51; m <= 65; m++ {
		id := "j@2026-03-01T" + time.Date(2026, 3, 1, 15, m, 0, 0, time.UTC).Format("15:04:05") + "Z"
		if len(sent[id]) != 1 {
			t.Fatalf("%s dispatched %d times by the advance, want 1", id, len(sent[id]))
		}
	}
	if len(h.loops) == 0 {
		t.Fatal("no settle queued")
	}
	// The partition moves to an empty store; the settle stays queued.
	h.moveToEmptyStore("j")
	// A late pause (15:55) and a put on the paused job (15:56, a new
	// payload), both consumed before the settle.
	h.command("j", base.Add(-5*time.Minute), `{"v":1,"op":"pause"}`)
	h.command("j", base.Add(-4*time.Minute), `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"put":2}}}`)
	// The next advance runs there before the old version's settle too.
	h.advance(base.Add(7 * time.Minute))
	h.drain() // the settle, stale, and what the advance left
	h.advance(base.Add(7 * time.Minute))
	h.drain()
	h.requireOnePayload()
	// Nor once more with the same: the new owner owes what the old one did.
	for m := 51; m <= 65; m++ {
		id := "j@2026-03-01T" + time.Date(2026, 3, 1, 15, m, 0, 0, time.UTC).Format("15:04:05") + "Z"
		if got := h.fired()[id]; len(got) != 1 {
			t.Errorf("%s dispatched %d times, want 1", id, len(got))
		}
	}
	// And nothing owed is lost: 16:06 and 16:07 go out under the put.
	for _, ts := range []string{"16:06:00", "16:07:00"} {
		if got := h.fired()["j@2026-03-01T"+ts+"Z"]; len(got) != 1 || got[0] != `{"put":2}` {
			t.Fatalf("j@%s went out as %v, want once with the put's payload", ts, got)
		}
	}
}
