package codecs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

func BenchmarkAppendDispatch(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := codecs.Dispatch{FireID: codecs.ScheduledFireID("tenant-42/report-daily", at), JobID: "tenant-42/report-daily",
		Trigger: codecs.TriggerSchedule, ScheduledAt: at, FiredAt: at.Add(1234 * time.Microsecond), Missed: 0,
		Bucket: "nightly", Payload: json.RawMessage(`{"report":"daily","format":"pdf","recipients":["a@example.com"]}`)}
	dst := codecs.AppendDispatch(nil, &d)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		dst = codecs.AppendDispatch(dst[:0], &d)
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	key := []byte("tenant-42/report-daily")
	value := []byte(`{"v":1,"op":"put","job":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","payload":{"report":"daily","format":"pdf"},"bucket":"nightly","misfire_policy":"fire_once","misfire_grace":"5m"}}`)
	lim := codecs.DefaultLimits()
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codecs.DecodeCommand(key, value, lim); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCommandPut measures the decode of a put as the bench and
// the API write it (every 1m with a start and a misfire grace, no
// payload): strict, the strict decoder alone (what DecodeCommand did before
// it read this form with its fast reader); DecodeCommand, as it is.
//
// go test -run X -bench DecodeCommandPut ./codecs/
func BenchmarkDecodeCommandPut(b *testing.B) {
	raw, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpPut, Job: &codecs.JobDef{Every: "1m", Start: "2026-12-01T04:00:07Z", MisfireGrace: "5m"}})
	if err != nil {
		b.Fatal(err)
	}
	key, lim := []byte("job-0000001"), codecs.DefaultLimits()
	for _, c := range []struct {
		name   string
		decode func(key, raw []byte, lim codecs.Limits) (codecs.Command, error)
	}{{"strict", codecs.DecodeCommandStrict}, {"DecodeCommand", codecs.DecodeCommand}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(key, raw, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchJobRecord is the encoded job record the decode benchmarks read: a
// weekday cron in a zone, a small JSON payload, a bucket.
func benchJobRecord() []byte {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return codecs.EncodeJobRecord(&codecs.JobRecord{Version: 7, Status: codecs.StatusActive,
		Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}, Payload: []byte(`{"report":"daily","format":"pdf"}`),
			Bucket: "nightly", MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: 5 * time.Minute},
		NotBefore: t0, CreatedAt: t0, UpdatedAt: t0})
}

func BenchmarkDecodeJobRecord(b *testing.B) {
	rec := benchJobRecord()
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codecs.DecodeJobRecord(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobBucket compares what the job view's bucket index reads
// from each record at the end of a recovery: the whole record (before) or
// the bucket alone.
func BenchmarkJobBucket(b *testing.B) {
	rec := benchJobRecord()
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		r := codecs.GetJobRecord()
		defer codecs.PutJobRecord(r)
		for b.Loop() {
			if err := codecs.DecodeJobRecordInto(rec, r); err != nil || r.Job.Bucket != "nightly" {
				b.Fatal(err)
			}
		}
	})
	b.Run("bucket", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bk, ok := codecs.JobBucket(rec); !ok || string(bk) != "nightly" {
				b.Fatal(bk)
			}
		}
	})
}

func BenchmarkEncodeJobRecord(b *testing.B) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &codecs.JobRecord{Version: 7, Status: codecs.StatusActive,
		Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}, Payload: []byte(`{"report":"daily","format":"pdf"}`),
			Bucket: "nightly", MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: 5 * time.Minute},
		NotBefore: t0, CreatedAt: t0, UpdatedAt: t0}
	b.ReportAllocs()
	for b.Loop() {
		_ = codecs.EncodeJobRecord(r)
	}
}

// BenchmarkDecodeShardRecord decodes a shard record holding a full bulk
// history (16 operations queued, 32 finished): "full" is what every
// command and advance paid before DecodeShardHead (the bulk state parsed
// from JSON), "head" what they pay now, "head+encode" an advance's
// decode and write back.
func BenchmarkDecodeShardRecord(b *testing.B) {
	recs := sampleShardRecords()
	raw := codecs.EncodeShardRecord(recs[len(recs)-1])
	b.Run("full", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codecs.DecodeShardRecord(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("head", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codecs.DecodeShardHead(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, _ := codecs.DecodeShardRecord(raw)
			r.Watermark = r.Watermark.Add(time.Second)
			_ = codecs.EncodeShardRecord(r)
		}
	})
	b.Run("head+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, _ := codecs.DecodeShardHead(raw)
			r.Watermark = r.Watermark.Add(time.Second)
			_ = codecs.EncodeShardRecord(r)
		}
	})
}

// BenchmarkAppendScheduled encodes the event of BenchmarkAppendDispatch as
// the fan-out does, building the fire_id too (ScheduledFireID, then
// AppendDispatch: "format" and "alloc"), against one DispatchEncoder per
// chunk ("encoder"), for one chunk's fires: the same fired_at, the same
// scheduled_at.
func BenchmarkAppendScheduled(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := codecs.Dispatch{JobID: "tenant-42/report-daily", Trigger: codecs.TriggerSchedule, ScheduledAt: at,
		FiredAt: at.Add(1234 * time.Microsecond), Bucket: "nightly",
		Payload: json.RawMessage(`{"report":"daily","format":"pdf","recipients":["a@example.com"]}`)}
	b.Run("format", func(b *testing.B) {
		var dst []byte
		b.ReportAllocs()
		for b.Loop() {
			e := d
			e.FireID = codecs.ScheduledFireID(e.JobID, e.ScheduledAt)
			dst = codecs.AppendDispatch(dst[:0], &e)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		var (
			dst []byte
			enc codecs.DispatchEncoder
		)
		b.ReportAllocs()
		for b.Loop() {
			dst = enc.AppendScheduled(dst[:0], &d)
		}
	})
}

// BenchmarkValidateID: a job id of printable ASCII (the common case, a
// shortcut since 2026-12-06) and one with a non-ASCII letter (the rune
// checks and the NFC check).
func BenchmarkValidateID(b *testing.B) {
	for _, id := range []string{"tenant-42/report-daily-000123", "tenant-42/rapport-journalier-é"} {
		b.Run(map[bool]string{true: "ascii", false: "unicode"}[id[len(id)-1] < 0x80], func(b *testing.B) {
			for b.Loop() {
				if err := codecs.ValidateID(id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
