package codecs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// normRecord returns r with every time in UTC (zero stays zero) and an
// empty payload as nil, the form DecodeJobRecord returns.
func normRecord(r codecs.JobRecord) codecs.JobRecord {
	s := &r.Job.Spec
	s.At, s.Start, s.End = utc(s.At), utc(s.Start), utc(s.End)
	r.NotBefore, r.CreatedAt, r.UpdatedAt = utc(r.NotBefore), utc(r.CreatedAt), utc(r.UpdatedAt)
	if len(r.Job.Payload) == 0 {
		r.Job.Payload = nil
	}
	return r
}

func sampleRecords() []codecs.JobRecord {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	ny, _ := time.LoadLocation("America/New_York")
	return []codecs.JobRecord{
		{},
		{Version: 1, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Cron: "*/5 * * * *"}, MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: time.Minute}},
		{Version: 1<<64 - 1, Status: codecs.StatusPaused,
			Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", Start: t0, End: t0.Add(365 * 24 * time.Hour)},
				Payload: []byte(`{"a":[1,2,3],"s":"ä😀"}`), Bucket: "nightly", MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: 7 * 24 * time.Hour},
			NotBefore: t0, CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.In(ny)},
		{Version: 42, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: 90 * time.Second}, Payload: []byte{}, MisfirePolicy: codecs.MisfireSkip}},
		{Version: 3, Status: codecs.StatusCompleted, Job: codecs.Job{Spec: schedule.Spec{At: t0.In(ny)}, Payload: []byte(`null`)}, NotBefore: time.Unix(0, 0)},
		{Version: 5, Status: codecs.Status(200), Job: codecs.Job{Spec: schedule.Spec{Every: -time.Nanosecond, At: time.Unix(-1, 1)}, MisfireGrace: -1}},
		// Instants outside the int64-nanosecond range (1678..2262) that
		// schedules accept (years 1..9999).
		{Version: 6, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{At: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{Version: 7, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Hour,
			Start: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), End: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}}},
		{Version: 8, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{At: time.Date(1600, 6, 1, 0, 0, 0, 1, time.UTC)}},
			NotBefore: time.Date(1677, 9, 21, 0, 12, 43, 145224191, time.UTC), CreatedAt: time.Date(2262, 4, 11, 23, 47, 16, 854775808, time.UTC)},
		// A DST policy (format 3).
		{Version: 9, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Cron: "30 1 * 11 0#1", TZ: "America/New_York",
			DST: schedule.DST{Gap: schedule.GapSkip, Overlap: schedule.OverlapBoth}}}, Through: t0},
		{Version: 10, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 0 L * *", DST: schedule.DST{Overlap: schedule.OverlapLast}}}},
		// A jitter, a fire limit, a pause note (format 4), with and without a DST policy.
		{Version: 11, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}, Jitter: 30 * time.Second}},
		{Version: 12, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 * * * *", DST: schedule.DST{Gap: schedule.GapSkip}},
			Jitter: time.Nanosecond, MaxFires: 7}, Used: 3, Quota: 4, LimitEnd: t0, Pause: codecs.PauseNote{Note: "maintenance ä", By: "token:ops"}},
		{Version: 13, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{At: t0}}, Pause: codecs.PauseNote{By: "x"}},
		// A backfill in progress (format 5), with and without a DST policy.
		{Version: 11, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}, Payload: []byte(`{"b":1}`), Jitter: time.Second},
			Backfill: &codecs.Backfill{ID: "b-3-17", From: t0, To: t0.Add(time.Hour), Next: t0.Add(time.Minute), Done: 1, Total: 60}},
		{Version: 12, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "30 1 * * *", TZ: "Europe/Berlin",
			DST: schedule.DST{Gap: schedule.GapSkip, Overlap: schedule.OverlapFirst}}}, Through: t0,
			Backfill: &codecs.Backfill{ID: "b-0-0", From: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), To: t0, LastStep: t0, Total: 1 << 40}},
		// Several schedules and exclusions (format 5), with a backfill too.
		{Version: 14, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin",
			Also: []schedule.Spec{{Every: time.Hour}, {At: t0}, {Cron: "30 1 * * *", TZ: "America/New_York", DST: schedule.DST{Gap: schedule.GapSkip}}},
			Exclude: schedule.Exclusions{TZ: "Europe/Berlin", Dates: []schedule.Date{{Year: 2026, Month: 12, Day: 25}, {Year: 1, Month: 1, Day: 1}},
				Ranges: []schedule.Range{{From: t0, To: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}}}}}},
		{Version: 15, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute,
			Exclude: schedule.Exclusions{Dates: []schedule.Date{{Year: 2027, Month: 1, Day: 1}}, Calendars: []string{"de-holidays", "acme.closures"}}}},
			Backfill: &codecs.Backfill{ID: "b-1-1", From: t0, To: t0.Add(time.Hour), Total: 60}},
		// Owing fires since a shard time (format 5, and 6 beside a schedule set and a backfill).
		{Version: 16, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}}, NotBefore: t0, Through: t0, OwedAt: t0.Add(time.Hour)},
		{Version: 17, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", Also: []schedule.Spec{{Every: time.Hour}}}},
			Through: t0, OwedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), Backfill: &codecs.Backfill{ID: "b-1-2", From: t0, To: t0.Add(time.Hour), Total: 60}},
		// Written by a command (format 6: the command's offset): alone, and
		// beside every other extension.
		{Version: 18, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}}, Applied: 1},
		{Version: 19, Status: codecs.StatusDeleted, Through: t0, NotBefore: t0, Applied: 1<<63 + 5},
		{Version: 20, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", Also: []schedule.Spec{{Every: time.Hour}}}, Jitter: time.Second},
			Through: t0, OwedAt: t0, Applied: 300, Backfill: &codecs.Backfill{ID: "b-1-299", From: t0, To: t0.Add(time.Hour), Total: 60}},
		// Bucket fan-outs a command sent the job's fire of (format 6): alone,
		// in a tombstone, and beside every other extension.
		{Version: 21, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Minute}, Bucket: "b"}, Applied: 2,
			Fanned: []codecs.FanoutMark{{TriggerID: "deploy-7", T: t0}}},
		{Version: 22, Status: codecs.StatusDeleted, Fanned: []codecs.FanoutMark{{TriggerID: "", T: t0}, {TriggerID: "t\x00", T: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{Version: 23, Status: codecs.StatusPaused, Job: codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", Also: []schedule.Spec{{Every: time.Hour}}}, Bucket: "b"},
			Through: t0, OwedAt: t0, Applied: 301, Backfill: &codecs.Backfill{ID: "b-1-300", From: t0, To: t0.Add(time.Hour), Total: 60},
			Fanned: []codecs.FanoutMark{{TriggerID: "t", T: t0}}},
	}
}

// TestJobRecordDSTFormat: a record with the default DST policy is written in
// format 2, byte for byte as before the policy existed (older instances
// still read it); only a non-default policy needs format 3.
func TestJobRecordDSTFormat(t *testing.T) {
	t.Parallel()
	for i, r := range sampleRecords() {
		b := codecs.EncodeJobRecord(&r)
		want := byte(2)
		switch {
		case r.Job.Jitter != 0 || r.Job.MaxFires != 0 || r.Used != 0 || r.Quota != 0 || !r.LimitEnd.IsZero() || r.Pause != (codecs.PauseNote{}):
			want = 4
		case !r.Job.Spec.DST.IsZero():
			want = 3
		}
		if r.Backfill != nil || !r.OwedAt.IsZero() {
			want = 5
		}
		if len(r.Job.Spec.Also) > 0 || !r.Job.Spec.Exclude.IsZero() || (r.Backfill != nil && !r.OwedAt.IsZero()) || r.Applied != 0 || len(r.Fanned) > 0 {
			want = 6
		}
		require.Equal(t, want, b[1], "record %d", i)
		st, ok := codecs.JobStatus(b)
		require.True(t, ok)
		require.Equal(t, r.Status, st)
	}
}

func TestJobRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for i, r := range sampleRecords() {
		b := codecs.EncodeJobRecord(&r)
		require.False(t, codecs.IsShardRecord(b))
		got, err := codecs.DecodeJobRecord(b)
		require.NoError(t, err, "record %d", i)
		require.Equal(t, normRecord(r), *got, "record %d", i)
		// Re-encoding is stable.
		require.Equal(t, b, codecs.EncodeJobRecord(got), "record %d", i)
	}
}

func TestJobRecordPayloadAliasesInput(t *testing.T) {
	t.Parallel()
	r := codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Second}, Payload: []byte(`"abc"`)}}
	b := codecs.EncodeJobRecord(&r)
	got, err := codecs.DecodeJobRecord(b)
	require.NoError(t, err)
	require.Equal(t, len(got.Job.Payload), cap(got.Job.Payload), "payload must not be appendable into the rest of b")
}

func TestJobRecordTruncated(t *testing.T) {
	t.Parallel()
	for i, r := range sampleRecords() {
		b := codecs.EncodeJobRecord(&r)
		for n := 0; n < len(b); n++ {
			require.NotPanics(t, func() {
				got, err := codecs.DecodeJobRecord(b[:n:n])
				require.Error(t, err, "record %d truncated to %d of %d bytes", i, n, len(b))
				require.Nil(t, got)
			})
		}
		// Trailing bytes are an error too (in format 4, a truncated extension).
		_, err := codecs.DecodeJobRecord(append(b[:len(b):len(b)], 0))
		if r.Backfill == nil && r.OwedAt.IsZero() && len(r.Job.Spec.Also) == 0 && r.Job.Spec.Exclude.IsZero() && r.Applied == 0 && len(r.Fanned) == 0 {
			require.ErrorContains(t, err, "trailing")
		} else {
			require.ErrorContains(t, err, "truncated")
		}
	}
}

func TestDecodeJobRecordErrors(t *testing.T) {
	t.Parallel()
	valid := codecs.EncodeJobRecord(&codecs.JobRecord{Version: 1})
	for _, tc := range []struct {
		name   string
		in     []byte
		notJob bool
	}{
		{"nil", nil, true},
		{"empty", []byte{}, true},
		{"tag only", []byte{'J'}, true},
		{"shard record", codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: time.Unix(1, 0)}), true},
		{"json", []byte(`{"v":1}`), true},
		{"unknown format", append([]byte{'J', 4}, valid[2:]...), false},
		{"format 3 without the DST policy", append([]byte{'J', 3}, valid[2:]...), false},
		{"format 1 with format 2's extra field", append([]byte{'J', 1}, valid[2:]...), false},
		{"bad time flag", func() []byte {
			b := append([]byte(nil), valid...)
			b[len(b)-1] = 9
			return b
		}(), false},
		{"huge length", []byte{'J', 1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
		{"varint overflow", []byte{'J', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
		{"applied extension holding 0", func() []byte {
			b := codecs.EncodeJobRecord(&codecs.JobRecord{Version: 1, Applied: 7})
			b[len(b)-1] = 0 // never written: 0 is "no command known"
			return b
		}(), false},
	} {
		got, err := codecs.DecodeJobRecord(tc.in)
		require.Error(t, err, tc.name)
		require.Nil(t, got, tc.name)
		require.Equal(t, tc.notJob, errors.Is(err, codecs.ErrNotJob), "%s: %v", tc.name, err)
	}
}

func TestShardRecord(t *testing.T) {
	t.Parallel()
	for _, w := range []time.Time{
		{},
		time.Unix(0, 0),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 7200)),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		b := codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: w})
		require.True(t, codecs.IsShardRecord(b))
		_, err := codecs.DecodeJobRecord(b)
		require.ErrorIs(t, err, codecs.ErrNotJob)
		got, err := codecs.DecodeShardRecord(b)
		require.NoError(t, err)
		require.Equal(t, utc(w), got.Watermark)
		for n := 1; n < len(b); n++ {
			_, err := codecs.DecodeShardRecord(b[:n])
			require.Error(t, err, "truncated to %d", n)
		}
		_, err = codecs.DecodeShardRecord(append(b, 0))
		require.Error(t, err)
	}
	// Backfills in progress (format 3).
	refs := codecs.WithBackfill(codecs.WithBackfill(nil, "z", "b-1-2"), "a\x00", "b-1-9")
	refs = codecs.WithBackfill(refs, "z", "b-1-5") // replaces z's
	require.Equal(t, []codecs.BackfillRef{{Job: "a\x00", ID: "b-1-9"}, {Job: "z", ID: "b-1-5"}}, refs)
	require.Equal(t, refs, codecs.WithoutBackfill(refs, "z", "b-1-2"), "another backfill of the job stays")
	require.Equal(t, refs[:1], codecs.WithoutBackfill(refs, "z", "b-1-5"))
	require.Nil(t, codecs.WithoutBackfill(refs[:1], "a\x00", "b-1-9"))
	sr := codecs.ShardRecord{Watermark: time.Unix(5, 0).UTC(), Advancing: time.Unix(6, 0).UTC(), Backfills: refs}
	b := codecs.EncodeShardRecord(sr)
	require.Equal(t, byte(3), b[1])
	got, err := codecs.DecodeShardRecord(b)
	require.NoError(t, err)
	require.Equal(t, sr, got)
	for n := 1; n < len(b); n++ {
		_, err := codecs.DecodeShardRecord(b[:n])
		require.Error(t, err, "truncated to %d", n)
	}
	_, err = codecs.DecodeShardRecord(append(b, 0))
	require.Error(t, err)
	require.Equal(t, byte(2), codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: sr.Watermark})[1], "format 2 without backfills")

	// Bucket fan-outs (format 5), beside backfills.
	sr.Fanouts = []codecs.FanoutRef{{TriggerID: "t", Bucket: "b", T: time.Unix(4, 0).UTC(), Started: time.Unix(5, 0).UTC(), After: "k"},
		{TriggerID: "u", Bucket: "b", T: time.Unix(4, 0).UTC(), Done: true, Finished: time.Unix(7, 0).UTC(), Passes: 300},
		{TriggerID: "v", Bucket: "b", T: time.Unix(4, 0).UTC(), Started: time.Unix(5, 0).UTC(), After: "k", Open: true, OpenThrough: "m"}}
	b = codecs.EncodeShardRecord(sr)
	require.Equal(t, byte(5), b[1])
	got, err = codecs.DecodeShardRecord(b)
	require.NoError(t, err)
	require.Equal(t, sr, got)
	for n := 1; n < len(b); n++ {
		_, err := codecs.DecodeShardRecord(b[:n])
		require.Error(t, err, "truncated to %d", n)
	}
	require.True(t, sr.Fanouts[0].Names(codecs.ShardTrigger{Kind: codecs.KindBucket, TriggerID: "t", Bucket: "b", T: time.Unix(4, 0)}))
	require.False(t, sr.Fanouts[0].Names(codecs.ShardTrigger{Kind: codecs.KindBucket, TriggerID: "t", Bucket: "b", T: time.Unix(4, 1)}), "another record time is another fan-out")
	require.False(t, sr.Fanouts[0].Covers("l"), "not open")
	require.True(t, sr.Fanouts[2].Covers("l"))
	require.True(t, sr.Fanouts[2].Covers("m"))
	require.False(t, sr.Fanouts[2].Covers("k"), "the chunk began after k")
	require.False(t, sr.Fanouts[2].Covers("ma"), "the chunk ended at m")
	sr.Fanouts = nil

	got, err = codecs.DecodeShardRecord(nil)
	require.NoError(t, err)
	require.Zero(t, got)
	for _, bad := range [][]byte{{'J', 1, 0}, {'S', 2, 0}, {'S'}, {'S', 1, 7}} {
		_, err := codecs.DecodeShardRecord(bad)
		require.Error(t, err, "%q", bad)
	}
	require.False(t, codecs.IsShardRecord(nil))
	require.False(t, codecs.IsShardRecord(codecs.EncodeJobRecord(&codecs.JobRecord{})))
}

func TestStatusString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "active", codecs.StatusActive.String())
	require.Equal(t, "paused", codecs.StatusPaused.String())
	require.Equal(t, "completed", codecs.StatusCompleted.String())
	require.Equal(t, "status(0)", codecs.Status(0).String())
}

// TestFarFutureJobSurvivesTable: a definition that validates must survive
// the table encoding unchanged (schedules accept years 1..9999).
func TestFarFutureJobSurvivesTable(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"2300-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "0001-01-01T00:00:01Z", "1600-02-29T12:00:00+01:00"} {
		j, err := codecs.JobDef{At: at}.Validate(codecs.DefaultLimits())
		require.NoError(t, err, at)
		got, err := codecs.DecodeJobRecord(codecs.EncodeJobRecord(&codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: j}))
		require.NoError(t, err)
		require.True(t, j.Spec.At.Equal(got.Job.Spec.At), "%s came back as %s", at, got.Job.Spec.At)
	}
}

// A format 1 record (written before Through existed) still decodes, with
// Through zero; a format 2 record round-trips Through.
func TestJobRecordFormats(t *testing.T) {
	t.Parallel()
	r := codecs.JobRecord{Version: 7, Status: codecs.StatusActive, Job: codecs.Job{Spec: schedule.Spec{Every: time.Second}},
		NotBefore: time.Unix(100, 0).UTC(), Through: time.Unix(50, 0).UTC()}
	b := codecs.EncodeJobRecord(&r)
	got, err := codecs.DecodeJobRecord(b)
	require.NoError(t, err)
	require.Equal(t, r.Through, got.Through)
	v1 := append([]byte{'J', 1}, b[2:len(b)-len(appendedTime(r.Through))]...)
	old, err := codecs.DecodeJobRecord(v1)
	require.NoError(t, err)
	require.True(t, old.Through.IsZero())
	require.Equal(t, r.NotBefore, old.NotBefore)
	require.Equal(t, r.Version, old.Version)
}

// appendedTime is the encoding of t as the last field of a record.
func appendedTime(t time.Time) []byte {
	a := codecs.EncodeShardRecord(codecs.ShardRecord{Watermark: t})
	return a[2 : len(a)-1] // tag, format ... Advancing (zero: one byte)
}

func TestHandledThrough(t *testing.T) {
	t.Parallel()
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	for _, tc := range []struct {
		notBefore, through, w, want time.Time
	}{
		{at(10), time.Time{}, at(20), at(20)}, // on time: the watermark
		{at(30), time.Time{}, at(20), at(30)}, // put ahead of the watermark
		{at(10), at(15), at(20), at(15)},      // owes fires behind the watermark
		{at(10), at(25), at(20), at(25)},
	} {
		r := codecs.JobRecord{NotBefore: tc.notBefore, Through: tc.through}
		require.Equal(t, tc.want, r.HandledThrough(tc.w))
	}
}

// TestOwedAtPassed: a record that owes fires since the shard's time OwedAt
// is handled through the watermark once an advance has completed past
// OwedAt (it handled every due entry up to its time), whether or not the
// settle that says so has reached the record; a paused one only up to its
// pause. Until then, Through says what is owed.
func TestOwedAtPassed(t *testing.T) {
	t.Parallel()
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	sched, err := schedule.Parse(schedule.Spec{Every: time.Second})
	require.NoError(t, err)
	active := codecs.JobRecord{Status: codecs.StatusActive, NotBefore: at(10), Through: at(10), OwedAt: at(100)}
	require.Equal(t, at(10), active.HandledThrough(at(100)), "no advance has completed past OwedAt")
	require.Equal(t, at(11), active.Due(at(100), sched))
	require.Equal(t, at(150), active.HandledThrough(at(150)))
	require.Equal(t, at(151), active.Due(at(150), sched))
	legacy := active
	legacy.OwedAt = time.Time{}
	require.Equal(t, at(10), legacy.HandledThrough(at(150)), "written before OwedAt: Through alone")
	// A settle of a pass under way (a job cut at its per-advance bound):
	// Through without OwedAt, on a record a command of this release wrote.
	cut := codecs.JobRecord{Status: codecs.StatusActive, NotBefore: at(10), Through: at(40), Applied: 7}
	require.Equal(t, at(40), cut.HandledThrough(at(20)), "the pass to a later time under way: how far it got")
	require.Equal(t, at(41), cut.Due(at(20), sched))
	require.Equal(t, at(150), cut.HandledThrough(at(150)), "that pass completed: through the watermark, its last settle in flight")
	require.Equal(t, at(151), cut.Due(at(150), sched))

	paused := codecs.JobRecord{Status: codecs.StatusPaused, NotBefore: at(120), Through: at(10), OwedAt: at(100)}
	require.Equal(t, at(11), paused.Due(at(100), sched), "owes fires from before its pause")
	require.Equal(t, at(111), paused.Due(at(110), sched), "an advance to 110 sent them up to 110")
	require.Zero(t, paused.Due(at(150), sched), "and one past its pause all of them")
}
