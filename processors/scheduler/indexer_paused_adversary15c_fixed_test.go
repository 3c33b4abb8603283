package scheduler

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv15cIndexerPausedIgnoresWatermark breaks docs/architecture.md "The
// due index is derived" as 487abd6 states it: "once the watermark is past
// [OwedAt] the record owes nothing behind the watermark ... A new owner's
// index derived from the unsettled record then agrees with the old
// owner's", and scheduler.go's indexer comment: "The entries are a
// function of the record and the shard's watermark alone".
//
// Mechanism: since 487abd6 a paused record's due time depends on the
// watermark too (codecs.JobRecord.Due -> owedThrough(w) for
// StatusPaused). But the indexer loads the watermark lazily only for an
// active record (`if rec.Status == codecs.StatusActive && !cached`), so a
// paused record indexed by an indexer that has not yet seen the shard
// record or an active record is derived with w = the zero time, i.e. from
// its Through alone: behind the fires an advance past OwedAt already sent.
// Every store open makes a new indexer; goka's restore of a store that is
// not fresh (an old owner coming back) writes the changelog's records in
// order through it, and a job's record usually precedes the shard record's
// next write; such a store's indexedUpTo is its own old watermark, so
// ensureIndex does not rebuild it when the table's watermark has not moved
// since. (Keys sort before "__chronos/" too: a deferred recovery's key-order
// rebuild also meets such a record before the shard record.)
//
// Consequence shown: the paused job's owed fires that the advance past
// OwedAt sent go out a second time without any crash.
func TestAdv15cIndexerPausedIgnoresWatermark(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	h := newPartitionHarness(t, 100, base)
	h.advance(base)
	h.drain()
	h.command("P", base, `{"v":1,"op":"put","job":{"every":"1m","misfire_grace":"168h","payload":{"p":1}}}`)
	// A pause ahead of the shard (ts 16:05): P still owes 16:01..16:05.
	h.command("P", base.Add(5*time.Minute), `{"v":1,"op":"pause"}`)
	// The advance to 16:03 sends 16:01..16:03; its settle stays queued.
	h.advance(base.Add(3 * time.Minute))
	for m := 1; m <= 3; m++ {
		if got := h.fired()[codecs.ScheduledFireID("P", base.Add(time.Duration(m)*time.Minute))]; len(got) != 1 {
			t.Fatalf("P@16:0%d dispatched %d times by the advance", m, len(got))
		}
	}
	val := mustGet(t, h, "P")
	rec, err := codecs.DecodeJobRecord(val)
	if err != nil {
		t.Fatal(err)
	}
	w := h.shard().Watermark
	sched, err := jobSchedule(h.s.schedules, "P", rec)
	if err != nil {
		t.Fatal(err)
	}
	want := rec.Due(w, sched) // 16:04: the advance past OwedAt sent 16:01..16:03
	kept, err := h.st.DueOf("P")
	if err != nil {
		t.Fatal(err)
	}
	// A new indexer (a store opened again) that meets P first.
	e, err := h.s.indexer(h.shardKey())(h.st, "P", val)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Due.Equal(want) {
		t.Errorf("a fresh indexer derives P (paused, owed at %s, watermark %s) due at %s; the rule (codecs.JobRecord.Due) and the kept index say %s and %s",
			rec.OwedAt.Format(time.TimeOnly), w.Format(time.TimeOnly), e.Due.Format(time.TimeOnly), want.Format(time.TimeOnly), kept.Format(time.TimeOnly))
	}

	// The adversary's second half restored P into a *new* store before the
	// shard record and then marked that store indexed up to the watermark
	// (ApplyMoves(nil, w)), which no store does: a new store is indexed up
	// to nothing and rebuilds at its first advance, and an old store's
	// indexer reads the watermark of the shard record it holds. With the
	// indexer reading the watermark for paused records too, the derivation
	// above is the rule's.
}
