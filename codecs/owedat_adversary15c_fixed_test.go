package codecs_test

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// TestAdv15cFormat5BackfillAndOwedAtTruncated breaks the record format's
// promise that a cut record is never read as complete
// (TestJobRecordTruncated: every proper prefix of an encoded record fails
// to decode; codecs/record.go: "Format 6 is format 5 with the count of
// its extensions before them, so that a record cut after one of them is
// not read as complete: written when the job has several schedules or
// exclusions (an extension that, unlike a backfill, may sit beside
// another)").
//
// Mechanism: commit 487abd6 added a second extension that may sit beside
// a backfill ('O', OwedAt) but kept such a record in format 5, which has
// no extension count (EncodeJobRecord: `case r.Backfill != nil ||
// !r.OwedAt.IsZero(): format = recordFormat5`). A job with a single
// schedule, a backfill in progress and owed fires (a late resume while
// its backfill runs) is written as format 5 with 'B' then 'O'; the prefix
// that ends after 'B' decodes without error as the same record with
// OwedAt zero. The sample records of TestJobRecordTruncated only put
// OwedAt beside a backfill in format 6 (record 17, with a schedule set),
// so the test does not see it. Read so, the record falls back to its
// Through alone: an index rebuilt from it owes again the fires an advance
// past OwedAt already sent (the case OwedAt was added to close).
func TestAdv15cFormat5BackfillAndOwedAtTruncated(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	r := codecs.JobRecord{Version: 18, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}},
		NotBefore: t0, Through: t0, OwedAt: t0.Add(time.Hour),
		Backfill: &codecs.Backfill{ID: "b-1-3", From: t0.Add(-time.Hour), To: t0, Total: 60}}
	b := codecs.EncodeJobRecord(&r)
	if b[1] != 6 {
		t.Fatalf("written in format %d, want 6 (it counts its extensions)", b[1])
	}
	for n := 2; n < len(b); n++ {
		got, err := codecs.DecodeJobRecord(b[:n:n])
		if err == nil {
			t.Errorf("the record cut to %d of %d bytes decodes as complete: OwedAt %v (want %v), backfill %v",
				n, len(b), got.OwedAt, r.OwedAt, got.Backfill != nil)
		}
	}
}
