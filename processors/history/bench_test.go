package history

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
)

// BenchmarkDispatchFold measures the history group's CPU per dispatch
// event of a job that already keeps DefaultFires fires with outcomes and
// DefaultChanges commands (the goka table write and its changelog produce
// are not included), for an event without payload and one with a 60 kB
// payload:
//   - whole: the path before issue 13's rework, kept as the reference:
//     decode the event whole (codecs.DecodeDispatch), decode the record,
//     merge, encode the record;
//   - fold: what the group does: read the event's fields up to its
//     payload (decodeDispatch), fold the fire into the record in place
//     (codecs.FoldFire).
//
// go test -run X -bench DispatchFold ./processors/history/
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
	rec0 := codecs.AppendHistory(nil, &h)
	// Events for the next fires, made beforehand.
	events := func(payload int) [][]byte {
		var p json.RawMessage
		if payload > 0 {
			p = json.RawMessage(`"` + strings.Repeat("x", payload-2) + `"`)
		}
		out := make([][]byte, 1000)
		for i := range out {
			t := at.Add(time.Duration(DefaultFires+i) * time.Minute)
			out[i] = codecs.AppendDispatch(nil, &codecs.Dispatch{FireID: codecs.ScheduledFireID("job-0000001", t), JobID: "job-0000001",
				Trigger: codecs.TriggerSchedule, ScheduledAt: t, FiredAt: t.Add(80 * time.Millisecond), Payload: p})
		}
		return out
	}
	for _, payload := range []int{0, 60_000} {
		evs := events(payload)
		b.Run(fmt.Sprintf("payload=%d/whole", payload), func(b *testing.B) {
			b.ReportMetric(float64(len(rec0)), "record-bytes")
			b.ReportAllocs()
			rec := rec0
			for i := range b.N {
				if i%len(evs) == 0 {
					rec = rec0 // the events' fires are again the newest
				}
				d, err := codecs.DecodeDispatch(evs[i%len(evs)])
				if err != nil {
					b.Fatal(err)
				}
				h, err := codecs.DecodeHistory(rec)
				if err != nil {
					b.Fatal(err)
				}
				mergeDispatch(&h, d.FireID[len(d.JobID)+1:], d, DefaultFires)
				rec = codecs.AppendHistory(nil, &h)
			}
		})
		b.Run(fmt.Sprintf("payload=%d/fold", payload), func(b *testing.B) {
			b.ReportMetric(float64(len(rec0)), "record-bytes")
			b.ReportAllocs()
			rec := rec0
			for i := range b.N {
				if i%len(evs) == 0 {
					rec = rec0
				}
				d, suffix, err := decodeDispatch("job-0000001", evs[i%len(evs)])
				if err != nil {
					b.Fatal(err)
				}
				out, changed, err := codecs.FoldFire(rec, d.ScheduledAt.UTC(), suffix, DefaultFires, func(f *codecs.FireEntry) { applyDispatch(f, d) })
				if err != nil || !changed {
					b.Fatal(err, changed)
				}
				rec = out
			}
		})
	}
}
