package codecs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// requireCode asserts that err is a *codecs.Error with the given code and field.
func requireCode(t *testing.T, err error, code, field string) {
	t.Helper()
	require.Error(t, err)
	var e *codecs.Error
	require.True(t, errors.As(err, &e), "error %T %v is not a *codecs.Error", err, err)
	require.Equal(t, code, e.Code, "code of %v", err)
	require.Equal(t, field, e.Field, "field of %v", err)
	require.NotEmpty(t, e.Reason)
	require.Contains(t, e.Error(), code)
}

func TestDecodeCommandRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", codecs.MaxIDLen+1)
	small := codecs.Limits{MaxPayload: 10}
	for _, tc := range []struct {
		name  string
		key   string
		value string
		lim   *codecs.Limits
		code  string
		field string
	}{
		{"empty value", "j", ``, nil, codecs.CodeMalformed, ""},
		{"backfill without from", "j", `{"v":1,"op":"backfill","to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeInvalidField, "from"},
		{"backfill without to", "j", `{"v":1,"op":"backfill","from":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeInvalidField, "to"},
		{"backfill bad time", "j", `{"v":1,"op":"backfill","from":"yesterday","to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeInvalidField, "from"},
		{"backfill zero time", "j", `{"v":1,"op":"backfill","from":"0001-01-01T00:00:00Z","to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeInvalidField, "from"},
		{"backfill empty range", "j", `{"v":1,"op":"backfill","from":"2026-01-01T01:00:00+01:00","to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeInvalidField, "to"},
		{"backfill from as a number", "j", `{"v":1,"op":"backfill","from":1,"to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeMalformed, "from"},
		{"from on another op", "j", `{"v":1,"op":"pause","from":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeUnknownField, "from"},
		{"to on cancel", "j", `{"v":1,"op":"cancel_backfill","to":"2026-01-01T00:00:00Z"}`, nil, codecs.CodeUnknownField, "from"},
		{"backfill From", "j", `{"v":1,"op":"backfill","From":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`, nil, codecs.CodeUnknownField, "From"},
		{"malformed json", "j", `{"v":1,"op":"put"`, nil, codecs.CodeMalformed, ""},
		{"not an object", "j", `[1,2]`, nil, codecs.CodeMalformed, ""},
		{"garbage", "j", `put j`, nil, codecs.CodeMalformed, ""},
		{"trailing data", "j", `{"v":1,"op":"delete"} {}`, nil, codecs.CodeMalformed, ""},
		{"trailing garbage", "j", `{"v":1,"op":"delete"}x`, nil, codecs.CodeMalformed, ""},
		{"wrong type v", "j", `{"v":"1","op":"delete"}`, nil, codecs.CodeMalformed, "v"},
		{"wrong type op", "j", `{"v":1,"op":5}`, nil, codecs.CodeMalformed, "op"},
		{"wrong type job", "j", `{"v":1,"op":"put","job":"x"}`, nil, codecs.CodeMalformed, "job"},
		{"wrong type nested", "j", `{"v":1,"op":"put","job":{"every":5}}`, nil, codecs.CodeMalformed, "job.every"},
		{"unknown version 2", "j", `{"v":2,"op":"delete"}`, nil, codecs.CodeUnknownVersion, "v"},
		{"version missing", "j", `{"op":"delete"}`, nil, codecs.CodeUnknownVersion, "v"},
		{"unknown op", "j", `{"v":1,"op":"explode"}`, nil, codecs.CodeUnknownOp, "op"},
		{"op missing", "j", `{"v":1}`, nil, codecs.CodeUnknownOp, "op"},
		{"op wrong case", "j", `{"v":1,"op":"PUT"}`, nil, codecs.CodeUnknownOp, "op"},
		{"unknown top-level field", "j", `{"v":1,"op":"delete","force":true}`, nil, codecs.CodeUnknownField, "force"},
		{"unknown job field", "j", `{"v":1,"op":"put","job":{"every":"1m","retries":3}}`, nil, codecs.CodeUnknownField, "retries"},
		{"empty key", "", `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"empty key with id", "", `{"v":1,"op":"delete","id":"j"}`, nil, codecs.CodeInvalidID, "id"},
		{"key id mismatch", "j", `{"v":1,"op":"delete","id":"k"}`, nil, codecs.CodeInvalidID, "id"},
		{"id too long", long, `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"control char in id", "a\nb", `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"nul in id", "a\x00b", `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"del in id", "a\x7fb", `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"invalid utf8 id", "a\xffb", `{"v":1,"op":"delete"}`, nil, codecs.CodeInvalidID, "id"},
		{"reserved prefix", "__chronos/shard/0/0", `{"v":1,"op":"delete"}`, nil, codecs.CodeReservedID, "id"},
		{"put without job", "j", `{"v":1,"op":"put"}`, nil, codecs.CodeInvalidField, "job"},
		{"put with null job", "j", `{"v":1,"op":"put","job":null}`, nil, codecs.CodeInvalidField, "job"},
		{"put with empty job", "j", `{"v":1,"op":"put","job":{}}`, nil, codecs.CodeInvalidSchedule, "schedule"},
		{"bad cron", "j", `{"v":1,"op":"put","job":{"cron":"* * *"}}`, nil, codecs.CodeInvalidSchedule, "cron"},
		{"bad cron value", "j", `{"v":1,"op":"put","job":{"cron":"61 * * * *"}}`, nil, codecs.CodeInvalidSchedule, "cron"},
		{"every zero", "j", `{"v":1,"op":"put","job":{"every":"0s"}}`, nil, codecs.CodeInvalidSchedule, "every"},
		{"every negative", "j", `{"v":1,"op":"put","job":{"every":"-5s"}}`, nil, codecs.CodeInvalidSchedule, "every"},
		{"every not a duration", "j", `{"v":1,"op":"put","job":{"every":"abc"}}`, nil, codecs.CodeInvalidSchedule, "every"},
		{"every below minimum", "j", `{"v":1,"op":"put","job":{"every":"500ms"}}`, nil, codecs.CodeInvalidSchedule, "every"},
		{"bad at", "j", `{"v":1,"op":"put","job":{"at":"tomorrow"}}`, nil, codecs.CodeInvalidSchedule, "at"},
		{"at after 9999 in UTC", "j", `{"v":1,"op":"put","job":{"at":"9999-12-31T23:00:00-05:00"}}`, nil, codecs.CodeInvalidSchedule, "at"},
		{"at before year 1 in UTC", "j", `{"v":1,"op":"put","job":{"at":"0001-01-01T00:30:00+01:00"}}`, nil, codecs.CodeInvalidSchedule, "at"},
		{"end after 9999 in UTC", "j", `{"v":1,"op":"put","job":{"every":"1m","end":"9999-12-31T23:59:59-00:01"}}`, nil, codecs.CodeInvalidSchedule, "end"},
		{"at without zone", "j", `{"v":1,"op":"put","job":{"at":"2026-01-02T15:04:05"}}`, nil, codecs.CodeInvalidSchedule, "at"},
		{"bad start", "j", `{"v":1,"op":"put","job":{"every":"1m","start":"x"}}`, nil, codecs.CodeInvalidSchedule, "start"},
		{"bad end", "j", `{"v":1,"op":"put","job":{"every":"1m","end":"x"}}`, nil, codecs.CodeInvalidSchedule, "end"},
		{"end before start", "j", `{"v":1,"op":"put","job":{"every":"1m","start":"2026-01-02T00:00:00Z","end":"2026-01-01T00:00:00Z"}}`, nil, codecs.CodeInvalidSchedule, "end"},
		{"bad tz", "j", `{"v":1,"op":"put","job":{"cron":"0 * * * *","tz":"Mars/Olympus"}}`, nil, codecs.CodeInvalidSchedule, "tz"},
		{"local tz", "j", `{"v":1,"op":"put","job":{"cron":"0 * * * *","tz":"Local"}}`, nil, codecs.CodeInvalidSchedule, "tz"},
		{"cron and every", "j", `{"v":1,"op":"put","job":{"cron":"0 * * * *","every":"1m"}}`, nil, codecs.CodeInvalidSchedule, "schedule"},
		{"every and at", "j", `{"v":1,"op":"put","job":{"every":"1m","at":"2026-01-02T15:04:05Z"}}`, nil, codecs.CodeInvalidSchedule, "schedule"},
		{"all three", "j", `{"v":1,"op":"put","job":{"cron":"0 * * * *","every":"1m","at":"2026-01-02T15:04:05Z"}}`, nil, codecs.CodeInvalidSchedule, "schedule"},
		{"job payload too large", "j", `{"v":1,"op":"put","job":{"every":"1m","payload":{"k":"0123456789"}}}`, &small, codecs.CodePayloadTooLarge, "payload"},
		{"fire payload too large", "j", `{"v":1,"op":"fire","payload":"0123456789"}`, &small, codecs.CodePayloadTooLarge, "payload"},
		{"payload not json", "j", `{"v":1,"op":"put","job":{"every":"1m","payload":{a}}}`, nil, codecs.CodeMalformed, ""},
		{"bad misfire policy", "j", `{"v":1,"op":"put","job":{"every":"1m","misfire_policy":"retry"}}`, nil, codecs.CodeInvalidField, "misfire_policy"},
		{"bad misfire grace", "j", `{"v":1,"op":"put","job":{"every":"1m","misfire_grace":"soon"}}`, nil, codecs.CodeInvalidField, "misfire_grace"},
		{"negative misfire grace", "j", `{"v":1,"op":"put","job":{"every":"1m","misfire_grace":"-1s"}}`, nil, codecs.CodeInvalidField, "misfire_grace"},
		{"misfire grace over max", "j", `{"v":1,"op":"put","job":{"every":"1m","misfire_grace":"169h"}}`, nil, codecs.CodeInvalidField, "misfire_grace"},
		{"dst on every", "j", `{"v":1,"op":"put","job":{"every":"1m","dst":{"gap":"skip"}}}`, nil, codecs.CodeInvalidSchedule, "dst"},
		{"dst on at", "j", `{"v":1,"op":"put","job":{"at":"2026-01-02T15:04:05Z","dst":{"overlap":"both"}}}`, nil, codecs.CodeInvalidSchedule, "dst"},
		{"dst unknown gap", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":{"gap":"later"}}}`, nil, codecs.CodeInvalidSchedule, "dst"},
		{"dst unknown overlap", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":{"overlap":"twice"}}}`, nil, codecs.CodeInvalidSchedule, "dst"},
		{"dst unknown key", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":{"gap":"skip","fold":"x"}}}`, nil, codecs.CodeUnknownField, "fold"},
		{"dst key case", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":{"Gap":"skip"}}}`, nil, codecs.CodeUnknownField, "job.dst.Gap"},
		{"dst key twice", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":{"gap":"skip","gap":"shift"}}}`, nil, codecs.CodeMalformed, "job.dst.gap"},
		{"dst not an object", "j", `{"v":1,"op":"put","job":{"cron":"@daily","dst":"skip"}}`, nil, codecs.CodeMalformed, "job.dst"},
		{"cron L-n out of range", "j", `{"v":1,"op":"put","job":{"cron":"0 0 L-31 * *"}}`, nil, codecs.CodeInvalidSchedule, "cron"},
		{"cron nth out of range", "j", `{"v":1,"op":"put","job":{"cron":"0 0 * * 1#6"}}`, nil, codecs.CodeInvalidSchedule, "cron"},
		{"bucket with control char", "j", `{"v":1,"op":"put","job":{"every":"1m","bucket":"a\tb"}}`, nil, codecs.CodeInvalidField, "bucket"},
		{"bucket too long", "j", `{"v":1,"op":"put","job":{"every":"1m","bucket":"` + long + `"}}`, nil, codecs.CodeInvalidField, "bucket"},
		{"job on delete", "j", `{"v":1,"op":"delete","job":{"every":"1m"}}`, nil, codecs.CodeUnknownField, "job"},
		{"job on fire", "j", `{"v":1,"op":"fire","job":{"every":"1m"}}`, nil, codecs.CodeUnknownField, "job"},
		{"trigger_id on pause", "j", `{"v":1,"op":"pause","trigger_id":"t1"}`, nil, codecs.CodeUnknownField, "trigger_id"},
		{"payload on resume", "j", `{"v":1,"op":"resume","payload":{"a":1}}`, nil, codecs.CodeUnknownField, "payload"},
		{"trigger_id on put", "j", `{"v":1,"op":"put","job":{"every":"1m"},"trigger_id":"t"}`, nil, codecs.CodeUnknownField, "trigger_id"},
		{"trigger_id too long", "j", `{"v":1,"op":"fire","trigger_id":"` + long + `"}`, nil, codecs.CodeInvalidField, "trigger_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := codecs.DefaultLimits()
			if tc.lim != nil {
				lim = *tc.lim
			}
			c, err := codecs.DecodeCommand([]byte(tc.key), []byte(tc.value), lim)
			requireCode(t, err, tc.code, tc.field)
			require.Zero(t, c)
		})
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

func TestDecodeCommandValid(t *testing.T) {
	t.Parallel()
	def := func(j codecs.Job) codecs.Job {
		if j.MisfirePolicy == "" {
			j.MisfirePolicy = codecs.MisfireFireOnce
		}
		if j.MisfireGrace == 0 {
			j.MisfireGrace = codecs.DefaultMisfireGrace
		}
		return j
	}
	for _, tc := range []struct {
		name  string
		key   string
		value string
		want  codecs.Command
	}{
		{"backfill", "j1", `{"v":1,"op":"backfill","from":"2026-01-01T00:00:00+02:00","to":"2026-01-01T00:00:00.5Z"}`,
			codecs.Command{Op: codecs.OpBackfill, ID: "j1", From: mustTime(t, "2025-12-31T22:00:00Z"), To: mustTime(t, "2026-01-01T00:00:00.5Z")}},
		{"cancel backfill", "j1", `{"v":1,"op":"cancel_backfill"}`, codecs.Command{Op: codecs.OpCancelBackfill, ID: "j1"}},
		{"put cron defaults", "j1", `{"v":1,"op":"put","job":{"cron":"*/5 * * * *"}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j1", Job: def(codecs.Job{Spec: schedule.Spec{Cron: "*/5 * * * *"}})}},
		{"put cron with tz and bounds", "j1", `{"v":1,"op":"put","id":"j1","job":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin","start":"2026-01-01T00:00:00Z","end":"2027-01-01T00:00:00+01:00"}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j1", Job: def(codecs.Job{Spec: schedule.Spec{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin",
				Start: mustTime(t, "2026-01-01T00:00:00Z"), End: mustTime(t, "2027-01-01T00:00:00+01:00")}})}},
		{"put every", "job/ä", `{"v":1,"op":"put","job":{"every":"90s","bucket":"nightly","misfire_policy":"fire_all","misfire_grace":"5m"}}`,
			codecs.Command{Op: codecs.OpPut, ID: "job/ä", Job: codecs.Job{Spec: schedule.Spec{Every: 90 * time.Second}, Bucket: "nightly",
				MisfirePolicy: codecs.MisfireFireAll, MisfireGrace: 5 * time.Minute}}},
		{"put at, skip, zero grace", "j", `{"v":1,"op":"put","job":{"at":"2026-03-04T05:06:07.123Z","misfire_policy":"skip","misfire_grace":"0s"}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: codecs.Job{Spec: schedule.Spec{At: mustTime(t, "2026-03-04T05:06:07.123Z")},
				MisfirePolicy: codecs.MisfireSkip}}},
		{"put payload compacted", "j", "{\"v\":1,\"op\":\"put\",\"job\":{\"every\":\"1m\",\"payload\": {\n  \"a\" : [1, 2,\t3],\n  \"b\": \"x y\"\n}}}",
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: def(codecs.Job{Spec: schedule.Spec{Every: time.Minute}, Payload: []byte(`{"a":[1,2,3],"b":"x y"}`)})}},
		{"put null payload", "j", `{"v":1,"op":"put","job":{"every":"1m","payload":null}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: def(codecs.Job{Spec: schedule.Spec{Every: time.Minute}})}},
		{"put max id", strings.Repeat("x", codecs.MaxIDLen), `{"v":1,"op":"put","job":{"every":"1m"}}`,
			codecs.Command{Op: codecs.OpPut, ID: strings.Repeat("x", codecs.MaxIDLen), Job: def(codecs.Job{Spec: schedule.Spec{Every: time.Minute}})}},
		{"put calendar cron with dst", "j", `{"v":1,"op":"put","job":{"cron":"30 1 * 11 0#1","tz":"America/New_York","dst":{"gap":"skip","overlap":"both"}}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: def(codecs.Job{Spec: schedule.Spec{Cron: "30 1 * 11 0#1", TZ: "America/New_York",
				DST: schedule.DST{Gap: schedule.GapSkip, Overlap: schedule.OverlapBoth}}})}},
		// Spelled-out defaults are stored as the defaults (one stored form).
		{"put dst defaults spelled out", "j", `{"v":1,"op":"put","job":{"cron":"0 0 L * *","dst":{"gap":"shift","overlap":"first"}}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: def(codecs.Job{Spec: schedule.Spec{Cron: "0 0 L * *"}})}},
		{"put empty dst", "j", `{"v":1,"op":"put","job":{"cron":"0 0 LW * *","dst":{}}}`,
			codecs.Command{Op: codecs.OpPut, ID: "j", Job: def(codecs.Job{Spec: schedule.Spec{Cron: "0 0 LW * *"}})}},
		{"delete", "j", `{"v":1,"op":"delete"}`, codecs.Command{Op: codecs.OpDelete, ID: "j"}},
		{"delete with whitespace", "j", " \n{\"v\":1,\"op\":\"delete\",\"id\":\"j\"}\n ", codecs.Command{Op: codecs.OpDelete, ID: "j"}},
		{"pause", "j", `{"v":1,"op":"pause"}`, codecs.Command{Op: codecs.OpPause, ID: "j"}},
		{"resume", "j", `{"v":1,"op":"resume"}`, codecs.Command{Op: codecs.OpResume, ID: "j"}},
		{"fire bare", "j", `{"v":1,"op":"fire"}`, codecs.Command{Op: codecs.OpFire, ID: "j"}},
		{"fire with trigger and payload", "j", `{"v":1,"op":"fire","trigger_id":"run-42","payload": [ true , null ]}`,
			codecs.Command{Op: codecs.OpFire, ID: "j", TriggerID: "run-42", Payload: []byte(`[true,null]`)}},
		{"fire payload at the limit", "j", `{"v":1,"op":"fire","payload":"12345678"}`,
			codecs.Command{Op: codecs.OpFire, ID: "j", Payload: []byte(`"12345678"`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := codecs.DecodeCommand([]byte(tc.key), []byte(tc.value), codecs.Limits{MaxPayload: 10 << 10})
			require.NoError(t, err)
			requireCommandEqual(t, tc.want, got)
		})
	}
	// The payload limit is inclusive.
	c, err := codecs.DecodeCommand([]byte("j"), []byte(`{"v":1,"op":"fire","payload":"12345678"}`), codecs.Limits{MaxPayload: 10})
	require.NoError(t, err)
	require.Equal(t, []byte(`"12345678"`), c.Payload)
}

// requireCommandEqual compares commands, times by instant.
func requireCommandEqual(t *testing.T, want, got codecs.Command) {
	t.Helper()
	for _, p := range []*codecs.Command{&want, &got} {
		p.Job.Spec.At, p.Job.Spec.Start, p.Job.Spec.End = utc(p.Job.Spec.At), utc(p.Job.Spec.Start), utc(p.Job.Spec.End)
	}
	require.Equal(t, want, got)
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func TestEncodeCommandRoundTrip(t *testing.T) {
	t.Parallel()
	for _, m := range []codecs.CommandMsg{
		{Op: codecs.OpPut, ID: "a", Job: &codecs.JobDef{Cron: "@daily", TZ: "America/New_York", Payload: json.RawMessage(`{"x":"<&>"}`)}},
		{Op: codecs.OpPut, Job: &codecs.JobDef{Every: "1h30m", Bucket: "b", MisfirePolicy: codecs.MisfireSkip, MisfireGrace: "1s"}},
		{Op: codecs.OpPut, Job: &codecs.JobDef{At: "2030-01-01T00:00:00+02:00"}},
		{Op: codecs.OpFire, TriggerID: "t", Payload: json.RawMessage(`1`)},
		{Op: codecs.OpDelete},
		{V: 7, Op: codecs.OpPause},
	} {
		b, err := codecs.EncodeCommand(m)
		require.NoError(t, err)
		require.True(t, json.Valid(b))
		require.True(t, bytes.HasPrefix(b, []byte(`{"v":1,`)), "%s", b)
		c, err := codecs.DecodeCommand([]byte("a"), b, codecs.DefaultLimits())
		require.NoError(t, err, "%s", b)
		require.Equal(t, m.Op, c.Op)
		// Job.Def gives a definition that validates to the same job.
		if m.Job != nil {
			b2, err := codecs.EncodeCommand(codecs.CommandMsg{Op: c.Op, Job: ptr(c.Job.Def())})
			require.NoError(t, err)
			c2, err := codecs.DecodeCommand([]byte("a"), b2, codecs.DefaultLimits())
			require.NoError(t, err, "%s", b2)
			requireCommandEqual(t, c, c2)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestJobDefValidate(t *testing.T) {
	t.Parallel()
	lim := codecs.DefaultLimits()
	// Payload validation is reachable directly (e.g. from the HTTP API).
	_, err := codecs.JobDef{Every: "1m", Payload: json.RawMessage(`{`)}.Validate(lim)
	requireCode(t, err, codecs.CodeInvalidField, "payload")
	// The zero Limits accept no payload at all.
	_, err = codecs.JobDef{Every: "1m", Payload: json.RawMessage(`1`)}.Validate(codecs.Limits{})
	requireCode(t, err, codecs.CodePayloadTooLarge, "payload")
	j, err := codecs.JobDef{Every: "1m"}.Validate(codecs.Limits{})
	require.NoError(t, err)
	require.Nil(t, j.Payload)
	// A DST policy survives Def; defaults are not written back.
	j, err = codecs.JobDef{Cron: "0 0 L-2 * *", DST: &codecs.DSTDef{Gap: "skip", Overlap: "first"}}.Validate(lim)
	require.NoError(t, err)
	require.Equal(t, &codecs.DSTDef{Gap: "skip"}, j.Def().DST)
	j, err = codecs.JobDef{Cron: "0 0 L-2 * *", DST: &codecs.DSTDef{Gap: "shift"}}.Validate(lim)
	require.NoError(t, err)
	require.Nil(t, j.Def().DST)
	// Def of a valid definition is valid, even at the ends of the year range.
	for _, d := range []codecs.JobDef{
		{At: "9999-12-31T23:59:59.999999999Z"},
		{At: "9999-12-31T23:00:00+05:00"},
		{At: "0001-01-01T00:30:00-01:00"},
		{Every: "1s", Start: "0001-01-01T00:00:00-00:01", End: "9999-12-31T12:00:00-11:00"},
	} {
		j, err := d.Validate(lim)
		require.NoError(t, err, "%+v", d)
		j2, err := j.Def().Validate(lim)
		require.NoError(t, err, "%+v", j.Def())
		require.Equal(t, j, j2)
	}
	// Def of a validated job.
	j, err = codecs.JobDef{At: "2026-05-06T07:08:09.5+02:00", Payload: json.RawMessage(` "x" `)}.Validate(lim)
	require.NoError(t, err)
	require.Equal(t, codecs.JobDef{At: "2026-05-06T05:08:09.5Z", Payload: json.RawMessage(`"x"`),
		MisfirePolicy: codecs.MisfireFireOnce, MisfireGrace: "1m0s"}, j.Def())
}

func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "job-1", "ä/€/😀", "__chronos", "_chronos/x", strings.Repeat("€", codecs.MaxIDLen/3)} {
		require.NoError(t, codecs.ValidateID(id), "%q", id)
	}
	for _, id := range []string{"", "\x1f", "a\x7f", "\xc3", strings.Repeat("€", codecs.MaxIDLen/3+1)} {
		requireCode(t, codecs.ValidateID(id), codecs.CodeInvalidID, "id")
	}
	requireCode(t, codecs.ValidateID("__chronos/"), codecs.CodeReservedID, "id")
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "invalid_id: id: empty job id", (&codecs.Error{Code: codecs.CodeInvalidID, Field: "id", Reason: "empty job id"}).Error())
	require.Equal(t, "malformed: bad", (&codecs.Error{Code: codecs.CodeMalformed, Reason: "bad"}).Error())
}

// randomPayload returns a random compact JSON value whose strings are drawn
// mostly from the characters encoding/json escapes for HTML (<, >, &,
// U+2028, U+2029) plus quotes, backslashes, controls and non-ASCII.
func randomPayload(rng *rand.Rand, depth int) string {
	alphabet := []string{"<", ">", "&", "\u2028", "\u2029", `\"`, `\\`, `\n`, `\u003c`, "a", "?a=1&b=2", "ä", "😀", " "}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(8) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		b.WriteByte('"')
		return b.String()
	}
	switch k := rng.IntN(4); {
	case depth > 2 || k == 0:
		return str()
	case k == 1:
		return strconv.Itoa(rng.IntN(1000) - 500)
	case k == 2:
		var parts []string
		for range rng.IntN(4) {
			parts = append(parts, randomPayload(rng, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		var parts []string
		for i := range rng.IntN(4) {
			parts = append(parts, str()[:1]+strconv.Itoa(i)+str()[1:]+":"+randomPayload(rng, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

// TestPayloadStoredAsSent checks, on generated payloads full of characters
// encoding/json would HTML-escape, that a put, a fire and a bucket trigger
// carry the payload byte for byte as the client sent it (compacted): the
// HTTP API's read-your-writes compares it with the stored one.
func TestPayloadStoredAsSent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20, 20))
	lim := codecs.DefaultLimits()
	for i := range 2000 {
		p := randomPayload(rng, 0)
		require.True(t, json.Valid([]byte(p)), "generator made invalid JSON %s", p)
		def := codecs.JobDef{Every: "1m", Payload: json.RawMessage(p)}
		b, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpPut, ID: "j", Job: &def})
		require.NoError(t, err)
		c, err := codecs.DecodeCommand([]byte("j"), b, lim)
		require.NoError(t, err, "case %d: %s", i, b)
		require.Equal(t, p, string(c.Job.Payload), "case %d: put", i)
		norm, err := def.Validate(lim)
		require.NoError(t, err)
		require.Equal(t, string(norm.Payload), string(c.Job.Payload), "case %d: what the API compares", i)

		b, err = codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpFire, ID: "j", TriggerID: "t", Payload: json.RawMessage(p)})
		require.NoError(t, err)
		c, err = codecs.DecodeCommand([]byte("j"), b, lim)
		require.NoError(t, err, "case %d: %s", i, b)
		require.Equal(t, p, string(c.Payload), "case %d: fire", i)

		b, err = codecs.EncodeBucketTrigger(codecs.BucketTrigger{Bucket: "b", Payload: json.RawMessage(p)})
		require.NoError(t, err)
		bt, err := codecs.DecodeBucketTrigger(b, 0, 0, lim)
		require.NoError(t, err, "case %d: %s", i, b)
		require.Equal(t, p, string(bt.Payload), "case %d: bucket trigger", i)
	}
}
