package codecs_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// reference is how a scheduled fire's event was encoded before
// DispatchEncoder: the fire_id built, then AppendDispatch.
func reference(d codecs.Dispatch) []byte {
	d.FireID = codecs.ScheduledFireID(d.JobID, d.ScheduledAt)
	d.Trigger, d.TriggerID = codecs.TriggerSchedule, ""
	return codecs.AppendDispatch(nil, &d)
}

// TestAppendScheduledMatchesAppendDispatch encodes 50,000 generated
// scheduled fires through one encoder, in the order drawn, and holds each
// to the reference encoding byte for byte. Times come from a small pool,
// so that the encoder's remembered text is reused and replaced in every
// order: instants a nanosecond apart, the same instant in other zones or
// with a monotonic reading, 1970 and 9999; ids and buckets with escapes,
// invalid UTF-8 and U+2028.
func TestAppendScheduledMatchesAppendDispatch(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := time.Now() // carries a monotonic reading
	berlin := time.FixedZone("CET", 3600)
	times := []time.Time{
		base, base.Add(time.Nanosecond), base.Add(time.Second), base.Add(-time.Nanosecond), base.In(berlin),
		base.Add(time.Millisecond).In(berlin), now, now.Add(time.Nanosecond), now.Round(0), now.In(berlin),
		time.Unix(0, 0).UTC(), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 3, 1, 12, 0, 0, 500000000, time.UTC), time.Date(2026, 3, 1, 12, 0, 0, 500000000, berlin),
	}
	ids := []string{"j", "tenant-42/report-daily", "a\"b\\c<d>&e", "\xff\xfe", "x\u2028y\u2029", "😀", "t\x00\x1f", "ab\xe2"}
	buckets := []string{"", "nightly", "b<&>", "\xed\xa0\x80"}
	payloads := []string{"", `{"k":[1,"v"]}`, `"s"`, `null`}
	rng := rand.New(rand.NewPCG(1, 2))
	var enc codecs.DispatchEncoder
	var dst []byte
	for i := range 50000 {
		d := codecs.Dispatch{
			JobID:       ids[rng.IntN(len(ids))],
			ScheduledAt: times[rng.IntN(len(times))],
			FiredAt:     times[rng.IntN(len(times))],
			Missed:      rng.Int64N(5) - 1,
			Bucket:      buckets[rng.IntN(len(buckets))],
			Payload:     json.RawMessage(payloads[rng.IntN(len(payloads))]),
			Backfill:    rng.IntN(4) == 0,
			// Ignored by AppendScheduled: a scheduled fire's are fixed.
			FireID: "other@x", Trigger: codecs.TriggerManual, TriggerID: "t1",
		}
		if rng.IntN(3) == 0 {
			d.DueAt = times[rng.IntN(len(times))]
		}
		want := reference(d)
		prefix := rng.IntN(3) // appending after bytes already in dst
		dst = enc.AppendScheduled(append(dst[:0], "xyz"[:prefix]...), &d)
		if got := dst[prefix:]; string(got) != string(want) {
			t.Fatalf("event %d (%+v):\n got %s\nwant %s", i, d, got, want)
		}
	}
}

// FuzzAppendScheduled encodes two scheduled fires through one encoder
// (the second's times derived from the first's, so that remembered texts
// are reused or not) and holds both to the reference encoding.
func FuzzAppendScheduled(f *testing.F) {
	f.Add("j", "", int64(1772366400000000000), int64(0), int64(1772366400001000000), int64(0), int64(0), int64(1), false)
	f.Add("a\"\xff\u2028", "b<", int64(-1), int64(5), int64(1<<62), int64(-3), int64(1), int64(0), true)
	f.Fuzz(func(t *testing.T, jobID, bucket string, sched, due, fired, missed, dSched, dFired int64, backfill bool) {
		var enc codecs.DispatchEncoder
		d := codecs.Dispatch{JobID: jobID, ScheduledAt: time.Unix(0, sched).UTC(), FiredAt: time.Unix(0, fired).In(time.FixedZone("z", int(missed%7)*3600)),
			Missed: missed, Bucket: bucket, Backfill: backfill}
		if due != 0 {
			d.DueAt = time.Unix(0, due)
		}
		if missed%2 == 0 {
			d.Payload = json.RawMessage(`{"k":[1,"v"]}`)
		}
		for range 2 {
			if got, want := enc.AppendScheduled([]byte("x"), &d)[1:], reference(d); string(got) != string(want) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
			d.ScheduledAt = d.ScheduledAt.Add(time.Duration(dSched % 3))
			d.FiredAt = d.FiredAt.Add(time.Duration(dFired % 3))
			d.DueAt = d.DueAt.Add(time.Duration(dSched % 2))
		}
	})
}
