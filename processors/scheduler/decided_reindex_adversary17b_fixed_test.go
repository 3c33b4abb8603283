package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdv17bRefusedBackfillMidAdvanceRepeatsAFire: promises (docs/topics.md,
// "Invalid commands go to chronos-rejects and change nothing"; "Delivery
// guarantees": fires repeat after "a crash, a failed produce or a lost store
// write", never otherwise).
//
// decided() (commit 5c90d78) records a refused backfill's offset by writing
// the job's record again, unchanged but for Applied. Every table write
// re-derives the job's due entry from its record (store.Set -> indexer ->
// JobRecord.Due at the shard's watermark). While an advance spans several
// callbacks (ChunkBudget), the entry of a job a finished chunk fired has
// moved past the fired time, but its record (an ordinary job: no Through)
// still derives it from the old watermark: the write puts the entry back
// on a time already dispatched, and the next advance sends it again.
//
// Inputs: jobs j, k, l (every 1s), j with a backfill in progress; chunk 1,
// budget 1ns. The advance to 12:00:03 runs its first callback (j's chunk:
// j@12:00:03 dispatched) and yields. A second backfill of j arrives then:
// refused (invalid_field, one in progress) and, new in 5c90d78, recorded.
// The advance finishes; advances to 12:00:04..06 follow. No crash anywhere.
//
// Expected: the refused command changes nothing: each fire_id once. Got:
// j@12:00:03 dispatched twice (same payload). With decided() switched off
// (return at once) this test passes. Severity: duplicate (same fire_id,
// no crash), caused by a rejected command. The same mechanism is older
// for accepted commands that rewrite the record without touching its
// schedule (cancel_backfill, backfill: replace the refused backfill here by
// a cancel_backfill and j@12:00:03 also goes out twice), so a fix belongs
// where a rewrite re-derives the entry.
func TestAdv17bRefusedBackfillMidAdvanceRepeatsAFire(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newPartitionHarnessBudget(t, 1, time.Nanosecond, t0)
	h.advance(t0)
	h.drain()
	for _, id := range []string{"j", "k", "l"} {
		h.command(id, t0, `{"v":1,"op":"put","job":{"every":"1s","payload":{"id":"`+id+`"}}}`)
		h.drain()
	}
	bf := `{"v":1,"op":"backfill","from":"2026-02-28T00:00:00Z","to":"2026-02-28T01:00:00Z"}`
	h.command("j", t0, bf)
	h.drain()
	for i := 1; i <= 2; i++ {
		h.advance(t0.Add(time.Duration(i) * time.Second))
		h.drain()
	}
	// The advance to 12:00:03: its first callback fires j's chunk and
	// yields (its continuation queued).
	h.advance(t0.Add(3 * time.Second))
	require.Len(t, h.fired()["j@2026-03-01T12:00:03Z"], 1, "j@12:00:03 fired by the first callback")
	require.NotEmpty(t, h.loops, "the advance continues through the loopback")
	rejects := h.adv17Rejects("j", t0.Add(3*time.Second), bf, h.off+1) // refused: one in progress
	h.off++
	require.Equal(t, []string{"invalid_field"}, rejects)
	h.drain()
	for i := 4; i <= 6; i++ {
		h.advance(t0.Add(time.Duration(i) * time.Second))
		h.drain()
	}
	for id, ps := range h.fired() {
		if len(ps) > 1 {
			t.Errorf("%s dispatched %d times (%v) without any crash; a refused backfill came between the advance's callbacks", id, len(ps), ps)
		}
	}
}

// TestMidAdvanceRecordCopiesKeepTheirEntry: the commands that write a
// copy of the job's record without settling it first (a backfill
// accepted, a backfill cancelled) between an advance's callbacks, after
// the pass fired the job, must not put its entry back on a time already
// sent (keepEntry). Without it each case sends the job's 12:00:02 and
// 12:00:03 twice (a backfill accepted or cancelled there did before 5c90d78).
func TestMidAdvanceRecordCopiesKeepTheirEntry(t *testing.T) {
	t.Parallel()
	bf := `{"v":1,"op":"backfill","from":"2026-02-28T00:00:00Z","to":"2026-02-28T00:00:10Z"}`
	for _, tc := range []struct{ name, job, cmd string }{
		{"cancel_backfill", "j", `{"v":1,"op":"cancel_backfill"}`},
		{"backfill accepted", "k", bf},
		{"backfill refused", "j", bf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			h := newPartitionHarnessBudget(t, 1, time.Nanosecond, t0)
			h.advance(t0)
			h.drain()
			for _, id := range []string{"j", "k", "l"} {
				h.command(id, t0, `{"v":1,"op":"put","job":{"every":"1s","payload":{"id":"`+id+`"}}}`)
				h.drain()
			}
			h.command("j", t0, bf)
			h.drain()
			h.advance(t0.Add(time.Second))
			h.drain()
			// The advance to 12:00:03: its first callbacks fire j and k,
			// then it yields.
			h.advance(t0.Add(3 * time.Second))
			h.deliverLoops(h.shardKey())
			require.Len(t, h.fired()["k@2026-03-01T12:00:03Z"], 1, "k@12:00:03 fired before the command")
			h.command(tc.job, t0.Add(3*time.Second), tc.cmd)
			h.drain()
			for i := 4; i <= 6; i++ {
				h.advance(t0.Add(time.Duration(i) * time.Second))
				h.drain()
			}
			for id, ps := range h.fired() {
				if len(ps) > 1 {
					t.Errorf("%s dispatched %d times without any crash (%s between the advance's callbacks)", id, len(ps), tc.name)
				}
			}
			for i := 1; i <= 6; i++ {
				for _, id := range []string{"j", "k", "l"} {
					fid := id + "@" + t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339)
					if len(h.fired()[fid]) == 0 {
						t.Errorf("%s never dispatched", fid)
					}
				}
			}
		})
	}
}
