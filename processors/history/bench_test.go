package history

import (
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// BenchmarkDispatchFold measures what the history group does per dispatch
// event of a job that already keeps DefaultFires fires with outcomes:
// decode the record, fold the event in, encode it (the goka table write
// and its changelog produce are not included).
func BenchmarkDispatchFold(b *testing.B) {
	at := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	var h codecs.History
	h.CommandOffset = -1
	for i := range DefaultFires {
		t := at.Add(time.Duration(i) * time.Minute)
		mergeDispatch(&h, t.Format(time.RFC3339Nano), codecs.Dispatch{JobID: "job-0000001", Trigger: codecs.TriggerSchedule, ScheduledAt: t, FiredAt: t.Add(120 * time.Millisecond)}, DefaultFires)
		mergeResult(&h, codecs.Result{JobID: "job-0000001", Suffix: t.Format(time.RFC3339Nano), ScheduledAt: t, Status: codecs.StatusSucceeded, Attempt: 1,
			StartedAt: t.Add(time.Second), FinishedAt: t.Add(3 * time.Second)}, DefaultFires)
	}
	for i := range DefaultChanges {
		mergeChange(&h, codecs.Change{Offset: int64(i), At: at, Actor: "ci-deployer", Op: codecs.OpPut, Detail: "cron */1 * * * * tz Europe/Berlin"}, DefaultChanges)
	}
	rec := codecs.AppendHistory(nil, &h)
	b.ReportMetric(float64(len(rec)), "record-bytes")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := at.Add(time.Duration(DefaultFires+i) * time.Minute)
		h, err := codecs.DecodeHistory(rec)
		if err != nil {
			b.Fatal(err)
		}
		mergeDispatch(&h, t.Format(time.RFC3339Nano), codecs.Dispatch{JobID: "job-0000001", Trigger: codecs.TriggerSchedule, ScheduledAt: t, FiredAt: t}, DefaultFires)
		rec = codecs.AppendHistory(rec[:0:0], &h)
	}
}
