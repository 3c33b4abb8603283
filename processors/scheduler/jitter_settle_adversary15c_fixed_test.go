package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv15cStaleSettleErasesJitterUpdateOwed breaks docs/schedules.md,
// "Changing the jitter (an update): the new definition owes exactly the
// scheduled times the old one had not dispatched, at their new due times:
// none goes out twice, none is lost", and docs/reliability.md "At least
// once ... it must not lose them".
//
// Mechanism. A late put (v1, every 1m, jitter 50s) owes fires; the
// advance to T1 sends them and, because v1's record has Through set,
// queues a settle of v1 with T = T1 (decide_due.go). T1 is chosen between
// a scheduled time n and its jittered due time n+o, so v1 has NOT sent
// n. A put (v2, the same schedule without jitter) is consumed before that
// settle (commands and loopbacks are different topics). It continues where
// v1 stopped: v1 handled through T1, its next scheduled time is n, so v2
// owes n at its new due time n, which is behind the shard's time
// (rebase): Through = n-1ns, OwedAt = T1. Then v1's settle arrives: stale
// (another version), so sentRecord -> settledRecord(v2, shard, T1+1ns):
// h = T1 is not before now (= T1) and v2's Through is set, so the
// "caught up" branch clears v2's Through and OwedAt and sets NotBefore to
// T1. v2 is now handled through T1 although nobody ever sent n: the
// fire_id j@n is lost (neither v1 nor v2 dispatches it). The settle says
// how far v1's *due times* went (T1), which is not how far v2's schedule
// was handled when the two map scheduled times to different due times.
func TestAdv15cStaleSettleErasesJitterUpdateOwed(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	// A scheduled minute n whose 50s jitter offset is at least 10s.
	var n time.Time
	var o time.Duration
	for k := 3; k < 60; k++ {
		c := base.Add(time.Duration(k) * time.Minute)
		if off := codecs.JitterOffset(codecs.ScheduledFireID("j", c), 50*time.Second); off >= 10*time.Second {
			n, o = c, off
			break
		}
	}
	if n.IsZero() {
		t.Skip("no minute with a jitter offset >= 10s")
	}
	t1 := n.Add(o / 2).Truncate(time.Second)
	nID := codecs.ScheduledFireID("j", n)

	h := newPartitionHarness(t, 100, base)
	h.advance(base)
	h.drain()
	// v1: a late put (ts 15:55, consumed at 16:00): owes since 15:55.
	h.command("j", base.Add(-5*time.Minute), `{"v":1,"op":"put","job":{"every":"1m","jitter":"50s","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"v":1}}}`)
	// The advance to T1 sends v1's owed and on-time fires up to T1 (not n:
	// its due time n+o is after T1) and queues v1's settle (T = T1).
	h.advance(t1)
	if got := h.fired()[nID]; len(got) != 0 {
		t.Fatalf("%s went out before its due time: %v", nID, got)
	}
	if len(h.loops) == 0 {
		t.Fatal("no settle of v1 queued")
	}
	// v2: the same schedule without the jitter, consumed before v1's
	// settle. It owes n (v1 had not dispatched it), at due time n < T1.
	h.command("j", t1, `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"fire_all","misfire_grace":"168h","payload":{"v":2}}}`)
	rec, err := codecs.DecodeJobRecord(mustGet(t, h, "j"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Through.IsZero() || !rec.Through.Before(n) {
		t.Fatalf("v2 does not owe %s after the update (through %s, owed at %s): the setup is wrong", n, rec.Through, rec.OwedAt)
	}
	// v1's settle, then the next advances.
	h.drain()
	h.advance(t1.Add(2 * time.Minute))
	h.drain()
	h.advance(t1.Add(3 * time.Minute))
	h.drain()
	h.requireOnePayload()
	if got := h.fired()[nID]; len(got) != 1 {
		rec, _ := codecs.DecodeJobRecord(mustGet(t, h, "j"))
		t.Errorf("%s (scheduled %s; v1 due %s, after T1 %s; v2 due %s) dispatched %d times %v, want once with v2's payload; record now through %s, not before %s",
			nID, n.Format(time.TimeOnly), n.Add(o).Format(time.TimeOnly), t1.Format(time.TimeOnly), n.Format(time.TimeOnly), len(got), got, rec.Through, rec.NotBefore)
	}
}

func mustGet(t *testing.T, h *partitionHarness, key string) []byte {
	t.Helper()
	v, err := h.st.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), v...)
}
