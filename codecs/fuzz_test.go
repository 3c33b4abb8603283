package codecs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// FuzzDecodeCommand decodes arbitrary records. It must never panic, errors
// must be *codecs.Error, and a decoded command re-encoded as a CommandMsg
// (with Job.Def) must decode to an equal command.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range [][2]string{
		{"j", `{"v":1,"op":"put","job":{"cron":"*/5 * * * *","tz":"Europe/Berlin","payload":{"a":[1,"<&>"]}}}`},
		{"j", `{"v":1,"op":"put","job":{"every":"90m","bucket":"b","misfire_policy":"fire_all","misfire_grace":"0s","start":"2026-01-01T00:00:00+05:00"}}`},
		{"j", `{"v":1,"op":"put","job":{"at":"2300-01-01T00:00:00.5Z"}}`},
		{"j", `{"v":1,"op":"fire","trigger_id":"t","payload":"\u2028"}`},
		{"j", `{"v":1,"op":"delete","id":"j"}`},
		{"__chronos/x", `{"v":1,"op":"pause"}`},
		{"j", `{"v":1,"op":"resume"} x`},
		{"j", `{"v":1,"op":"put","job":{"Cron":"* * * * *"}}`},
		{"j", `{"v":1,"op":"put","job":{"every":"1m","payload":{"a":1,"a":2}}}`},
		{"a‮b", `{"v":1,"op":"delete"}`},
		{"j", `{"v":1,"op":"fire","trigger_id":"x@2026-01-01T00:00:00Z"}`},
		{"j", `{"v":1,"op":"put","job":{"at":"0001-01-01T00:00:00Z"}}`},
		{"j", `{"v":1,"op":"put","job":{"every":"1m","jitter":"30s","max_fires":3}}`},
		{"j", `{"v":1,"op":"pause","note":"disk full \u00e4"}`},
		{"j", `{"v":1,"op":"resume","note":"x"}`},
		{"j", `{"v":1,"op":"put","job":{"cron":"*/5 * * * *","jitter":"6m"}}`},
		{"j", `{"v":1,"op":"backfill","from":"2026-01-01T00:00:00+02:00","to":"2026-01-02T00:00:00.5Z"}`},
		{"j", `{"v":1,"op":"backfill","from":"2026-01-02T00:00:00Z","to":"2026-01-01T00:00:00Z"}`},
		{"j", `{"v":1,"op":"cancel_backfill","if_version":3}`},
		{"j", `{"v":1,"op":"pause","from":"2026-01-01T00:00:00Z"}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	lim := codecs.DefaultLimits()
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := codecs.DecodeCommand(key, value, lim)
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.NotEmpty(t, e.Code)
			return
		}
		m := codecs.CommandMsg{Op: c.Op, ID: c.ID, TriggerID: c.TriggerID, Payload: c.Payload, Note: c.Note, IfVersion: c.IfVersion}
		if c.Op == codecs.OpPut {
			m.Job = ptr(c.Job.Def())
		}
		if c.Op == codecs.OpBackfill {
			require.True(t, c.From.Before(c.To), "a decoded backfill's range is not empty")
			m.From, m.To = c.From.Format(time.RFC3339Nano), c.To.Format(time.RFC3339Nano)
		}
		b, err := codecs.EncodeCommand(m)
		require.NoError(t, err)
		// Payloads survive byte for byte (no HTML escaping), so the
		// re-encoded command fits the same limits.
		c2, err := codecs.DecodeCommand(key, b, lim)
		require.NoError(t, err, "re-encoded %s", b)
		require.Equal(t, string(c.Payload), string(c2.Payload))
		require.Equal(t, string(c.Job.Payload), string(c2.Job.Payload))
		c.Payload, c2.Payload, c.Job.Payload, c2.Job.Payload = nil, nil, nil, nil
		requireCommandEqual(t, c, c2)
	})
}

// FuzzDecodeJobRecord decodes arbitrary table values. It must never panic,
// and a decoded record must re-encode to bytes that decode to the same record.
func FuzzDecodeJobRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(codecs.EncodeJobRecord(&r))
	}
	f.Add(codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: time.Unix(1, 2)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := codecs.DecodeJobRecord(b)
		if err != nil {
			require.Nil(t, r)
			return
		}
		b2 := codecs.EncodeJobRecord(r)
		r2, err := codecs.DecodeJobRecord(b2)
		require.NoError(t, err)
		require.Equal(t, r, r2)
		require.Equal(t, b2, codecs.EncodeJobRecord(r2), "encoding is canonical")
		_, _ = codecs.DecodeShardRecord(b)
	})
}

// FuzzDecodeJobRecordInto: decoding into a record that held another one
// (as the index passes reuse theirs) gives what a new record gets, and an
// error leaves nothing of the record before.
func FuzzDecodeJobRecordInto(f *testing.F) {
	samples := sampleRecords()
	for _, r := range samples {
		f.Add(codecs.EncodeJobRecord(&r), uint8(0))
	}
	f.Add([]byte{1, 2, 3}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, prev uint8) {
		want, wantErr := codecs.DecodeJobRecord(b)
		r := codecs.GetJobRecord()
		defer codecs.PutJobRecord(r)
		held := samples[int(prev)%len(samples)]
		require.NoError(t, codecs.DecodeJobRecordInto(codecs.EncodeJobRecord(&held), r))
		err := codecs.DecodeJobRecordInto(b, r)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
			require.Equal(t, codecs.JobRecord{}, *r)
			return
		}
		require.NoError(t, err)
		require.Equal(t, *want, *r)
	})
}

// FuzzDecodeShardHead decodes arbitrary shard records both ways: whatever
// DecodeShardRecord reads, DecodeShardHead reads with the same times and
// backfills, and the head encoded again decodes in full to the same
// record (its bulk state kept undecoded, byte for byte).
func FuzzDecodeShardHead(f *testing.F) {
	for _, r := range sampleShardRecords() {
		f.Add(codecs.EncodeShardRecord(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		head, herr := codecs.DecodeShardHead(b)
		full, err := codecs.DecodeShardRecord(b)
		if err != nil {
			return
		}
		require.NoError(t, herr)
		require.Equal(t, [2]time.Time{full.Watermark, full.Advancing}, [2]time.Time{head.Watermark, head.Advancing})
		require.Equal(t, full.Backfills, head.Backfills)
		require.Equal(t, full.Fanouts, head.Fanouts)
		require.True(t, head.Bulk.IsZero())
		again, err := codecs.DecodeShardRecord(codecs.EncodeShardRecord(head))
		require.NoError(t, err)
		require.Equal(t, full, again)
	})
}

// sampleShardRecords are shard records of every format: bare, with
// backfills, with bulk operations queued and finished.
func sampleShardRecords() []codecs.ShardRecord {
	w := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var done []codecs.BulkResult
	var queue []codecs.ShardTrigger
	for i := range codecs.BulkResultsKept {
		done = append(done, codecs.BulkResult{TriggerID: fmt.Sprintf("op-%02d", i), Op: codecs.BulkPause, Bucket: "fleet", T: w, Matched: 310, Changed: 290, Skipped: 2})
	}
	for i := range codecs.MaxBulkQueued {
		queue = append(queue, codecs.ShardTrigger{Kind: codecs.KindBulk, T: w, Op: codecs.BulkDelete, Prefix: "tenant-42.", TriggerID: fmt.Sprintf("q-%02d", i),
			AfterKey: "tenant-42.job-0041", Matched: 40, Changed: 12, Step: 3, Nonce: "0123456789abcdef0123456789abcdef"})
	}
	refs := []codecs.BackfillRef{{Job: "j", ID: "b-0-1"}}
	fanouts := []codecs.FanoutRef{
		{TriggerID: "deploy-7", Bucket: "fleet", T: w.Add(-time.Second), Started: w, After: "tenant-42.job-0041"},
		{TriggerID: "t\x00", Bucket: "b", T: w, Started: w, After: "z", Done: true, Finished: w.Add(time.Minute), Passes: 599},
		{TriggerID: "deploy-8", Bucket: "fleet", T: w, Started: w, After: "tenant-42.job-0041", Open: true, OpenThrough: "tenant-42.job-0099"},
	}
	return []codecs.ShardRecord{
		{Watermark: w},
		{Watermark: w, Advancing: w.Add(time.Second), Backfills: refs},
		{Watermark: w, Bulk: codecs.BulkState{Done: done[:1]}},
		{Watermark: w, Backfills: refs, Bulk: codecs.BulkState{Queue: queue, Done: done}},
		{Watermark: w, Fanouts: fanouts},
		{Watermark: w, Advancing: w.Add(time.Second), Backfills: refs, Bulk: codecs.BulkState{Done: done[:1]}, Fanouts: fanouts[:1]},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w.Add(time.Second), PassKey: "tenant-42.job-0041"},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w.Add(-time.Hour), Fanouts: fanouts, Backfills: refs},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w, PassKey: "b", PassCuts: []codecs.PassCut{{Key: "a", To: w.Add(time.Millisecond)}, {Key: "c\x00", To: w.Add(time.Second)}}},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w, PassKey: "b", PassCutsLost: true},
		{Watermark: w, Advancing: w.Add(time.Second), PassOpen: true, BegunBy: w.Add(time.Second)},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w, PassKey: "b", PassCutsLost: true, PassOpen: true},
		{Watermark: w, Advancing: w.Add(time.Second), PassOpen: true},
		{Watermark: w, Purged: 1},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w, PassKey: "b", Fanouts: fanouts[:1], Purged: 1 << 40},
		{Watermark: w, Advancing: w.Add(time.Second), PassAt: w, PassKey: "b", Queued: []time.Time{w.Add(2 * time.Second), w.Add(3 * time.Second)}, QueuedWaits: 2, BegunBy: w.Add(4 * time.Second)},
	}
}

// FuzzDecodeShardTrigger decodes arbitrary internal messages. It must never
// panic, and a decoded message must re-encode (EncodeInternal) and decode
// to the same message.
func FuzzDecodeShardTrigger(f *testing.F) {
	for _, s := range []string{
		`{"kind":"advance","t":"2026-01-02T03:04:05Z"}`,
		`{"kind":"advance","t":"2026-01-02T03:04:05.123+01:00","after_at":"2026-01-02T03:00:00Z","after_key":"j\n"}`,
		`{"kind":"bucket","t":"2026-01-02T03:04:05Z","bucket":"b","trigger_id":"t","payload":{"a":"<"}}`,
		`{"kind":"complete","t":"2026-01-02T03:04:05Z","version":18446744073709551615}`,
		`{"kind":"advance","t":"9999-12-31T23:59:59-23:59"}`,
		`{"kind":"retreat"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := codecs.DecodeShardTrigger(b)
		_, _ = codecs.DecodeTick(b)
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			return
		}
		_ = s.String()
		var enc []byte
		require.NotPanics(t, func() { enc = codecs.EncodeInternal(s) })
		s2, err := codecs.DecodeShardTrigger(enc)
		require.NoError(t, err, "%s", enc)
		requireJSONEqual(t, s.Payload, s2.Payload)
		require.True(t, s.T.Equal(s2.T))
		require.True(t, s.AfterAt.Equal(s2.AfterAt))
		s.Payload, s2.Payload = nil, nil
		s.T, s2.T, s.AfterAt, s2.AfterAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		require.Equal(t, s, s2)
	})
}

// FuzzAppendDispatch encodes arbitrary strings. The output must be valid
// JSON, byte-identical to encoding/json's, and decode to the same strings
// with invalid UTF-8 replaced by U+FFFD.
func FuzzAppendDispatch(f *testing.F) {
	f.Add("j@2026-01-02T03:04:05Z", "j", "schedule", "", "", int64(1767323045000000000), int64(1767323045000000001), int64(0))
	f.Add("j@t", "j\"<>&\\", "bucket", "b\u2028\u2029", "t\x00\x1f\x7f", int64(-1), int64(0), int64(-5))
	f.Add("\xff\xfe", "😀", "manual", "\xed\xa0\x80", "\b\f\n\r\t", int64(1<<62), int64(-1<<62), int64(1<<63-1))
	f.Fuzz(func(t *testing.T, fireID, jobID, trigger, bucket, triggerID string, sched, fired, missed int64) {
		d := codecs.Dispatch{V: codecs.DispatchVersion, FireID: fireID, JobID: jobID, Trigger: trigger,
			ScheduledAt: time.Unix(0, sched).UTC(), FiredAt: time.Unix(0, fired).UTC(), Missed: missed,
			Bucket: bucket, TriggerID: triggerID}
		if missed%2 == 0 {
			d.Payload = json.RawMessage(`{"k":[1,"v"]}`)
		}
		out := codecs.AppendDispatch([]byte("x"), &d)[1:]
		require.True(t, json.Valid(out), "%s", out)
		want, err := json.Marshal(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(out))
		got, err := codecs.DecodeDispatch(out)
		require.NoError(t, err)
		require.Equal(t, fixUTF8(fireID), got.FireID)
		require.Equal(t, fixUTF8(jobID), got.JobID)
		require.Equal(t, fixUTF8(trigger), got.Trigger)
		require.Equal(t, fixUTF8(bucket), got.Bucket)
		require.Equal(t, fixUTF8(triggerID), got.TriggerID)
		require.True(t, d.ScheduledAt.Equal(got.ScheduledAt))
		require.True(t, d.FiredAt.Equal(got.FiredAt))
		require.Equal(t, missed, got.Missed)
		require.Equal(t, string(d.Payload), string(got.Payload))
	})
}

// FuzzDecodeJobDef decodes arbitrary HTTP bodies. Errors are *codecs.Error;
// a decoded definition re-encodes to JSON that decodes to the same one.
func FuzzDecodeJobDef(f *testing.F) {
	for _, s := range []string{
		`{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","payload":{"a":[1,{"b":null}]}}`,
		`{"every":"1m","every":"2m"}`,
		`{"Every":"1m"}`,
		`{"at":"0001-01-01T00:00:00Z"}`,
		`{"every":"1m","payload":{"k":1,"k":2}}`,
		`{"every":"1m"} {}`,
		`null`,
		`{"schedules":[{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","dst":{"gap":"skip"}},{"every":"1h"}],"tz":"Asia/Tokyo","exclude":{"dates":["2026-12-25"],"ranges":[{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}]}}`,
		`{"schedules":[{"cron":"@daily","Tz":"UTC"}]}`,
		`{"every":"1m","exclude":{"ranges":[{"from":"x","from":"y"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := codecs.DecodeJobDef(b)
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			require.NotEmpty(t, e.Code)
			return
		}
		enc, err := json.Marshal(d)
		require.NoError(t, err)
		again, err := codecs.DecodeJobDef(enc)
		require.NoError(t, err, "%s", enc)
		requireJSONEqual(t, d.Payload, again.Payload)
		d.Payload, again.Payload = nil, nil
		require.Equal(t, d, again)
		// A valid definition (several schedules and exclusions included)
		// survives Def and the table record unchanged.
		j, err := d.Validate(codecs.DefaultLimits())
		if err != nil {
			var e *codecs.Error
			require.True(t, errors.As(err, &e), "%T %v", err, err)
			return
		}
		j2, err := j.Def().Validate(codecs.DefaultLimits())
		require.NoError(t, err, "%+v", j.Def())
		require.Equal(t, j, j2)
		rec := codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: j}
		got, err := codecs.DecodeJobRecord(codecs.EncodeJobRecord(&rec))
		require.NoError(t, err)
		require.Equal(t, normRecord(rec), *got)
	})
}

// TestShardRecordSamplesRoundTrip: every sample shard record, each format,
// decodes to itself.
func TestShardRecordSamplesRoundTrip(t *testing.T) {
	for i, r := range sampleShardRecords() {
		got, err := codecs.DecodeShardRecord(codecs.EncodeShardRecord(r))
		require.NoError(t, err, "sample %d", i)
		if r.Bulk.IsZero() {
			r.Bulk = codecs.BulkState{}
		}
		require.Equal(t, r, got, "sample %d", i)
	}
}

// FuzzJobBucket reads the bucket of arbitrary table values both ways:
// whatever DecodeJobRecord reads, JobBucket reads the same bucket (the
// job view's bucket index reads only the bucket). It never panics, and
// what it reads is a slice of the input.
func FuzzJobBucket(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(codecs.EncodeJobRecord(&r))
	}
	f.Add(codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: time.Unix(1, 2)}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		bucket, ok := codecs.JobBucket(b)
		r, err := codecs.DecodeJobRecord(b)
		if err == nil {
			require.True(t, ok)
			require.Equal(t, r.Job.Bucket, string(bucket))
		}
		if !ok {
			require.Nil(t, bucket)
		}
	})
}
