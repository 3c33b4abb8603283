package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// fakeProducer records what the API produces.
type fakeProducer struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

func (p *fakeProducer) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := make(kgo.ProduceResults, 0, len(rs))
	for _, r := range rs {
		r.Offset = int64(len(p.recs))
		p.recs = append(p.recs, r)
		res = append(res, kgo.ProduceResult{Record: r})
	}
	return res
}

func (p *fakeProducer) records() []*kgo.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*kgo.Record(nil), p.recs...)
}

type testAPI struct {
	url  string
	prod *fakeProducer
}

// newAPI serves httpapi.Server over a fake producer.
func newAPI(t *testing.T, token string) *testAPI {
	t.Helper()
	prod := &fakeProducer{}
	ts := httptest.NewServer((&httpapi.Server{Producer: prod, Token: token}).Handler())
	t.Cleanup(ts.Close)
	return &testAPI{url: ts.URL, prod: prod}
}

func TestJobsCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		id    string
		check func(t *testing.T, c codecs.Command, a httpapi.Accepted)
	}{
		{"put cron", []string{"put", "nightly", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--payload", `{"a": 1}`,
			"--bucket", "b", "--misfire", "skip", "--misfire-grace", "2m"}, "nightly",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				want, err := codecs.JobDef{Cron: "0 3 * * *", TZ: "Europe/Berlin", Payload: json.RawMessage(`{"a":1}`),
					Bucket: "b", MisfirePolicy: "skip", MisfireGrace: "2m"}.Validate(codecs.DefaultLimits())
				require.NoError(t, err)
				require.Equal(t, codecs.OpPut, c.Op)
				require.Equal(t, want, c.Job)
			}},
		{"put with a jitter", []string{"put", "spread", "--every", "1m", "--jitter", "30s"}, "spread",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, 30*time.Second, c.Job.Jitter)
			}},
		{"put calendar cron with a DST policy", []string{"put", "last-friday", "--cron", "30 1 * * 5L", "--tz", "America/New_York",
			"--dst-gap", "skip", "--dst-overlap", "both"}, "last-friday",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, "30 1 * * 5L", c.Job.Spec.Cron)
				require.Equal(t, schedule.DST{Gap: schedule.GapSkip, Overlap: schedule.OverlapBoth}, c.Job.Spec.DST)
			}},
		{"put every", []string{"put", "a/b", "--every", "30s", "--start", "2026-01-01T00:00:00Z", "--end", "2027-01-01T00:00:00Z"}, "a/b",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, codecs.OpPut, c.Op)
				require.Equal(t, "30s", c.Job.Def().Every)
				require.Equal(t, "2027-01-01T00:00:00Z", c.Job.Def().End)
			}},
		{"put several schedules with exclusions", []string{"put", "multi", "--cron", "0 9 * * 1-5", "--cron", "0 12 * * 6", "--every", "6h",
			"--tz", "Europe/Berlin", "--dst-gap", "skip", "--exclude-date", "2026-12-25", "--exclude-date", "2026-12-26",
			"--exclude-range", "2026-08-01T00:00:00Z/2026-08-15T00:00:00Z", "--exclude-calendar", "de-holidays"}, "multi",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				d := c.Job.Def()
				require.Equal(t, []codecs.ScheduleDef{
					{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin", DST: &codecs.DSTDef{Gap: "skip"}},
					{Cron: "0 12 * * 6", TZ: "Europe/Berlin", DST: &codecs.DSTDef{Gap: "skip"}},
					{Every: "6h0m0s", TZ: "Europe/Berlin"}}, d.Schedules)
				require.Equal(t, &codecs.ExcludeDef{Dates: []string{"2026-12-25", "2026-12-26"},
					Ranges: []codecs.RangeDef{{From: "2026-08-01T00:00:00Z", To: "2026-08-15T00:00:00Z"}}, Calendars: []string{"de-holidays"}}, d.Exclude)
				require.Equal(t, "Europe/Berlin", d.TZ)
			}},
		{"put schedules as JSON", []string{"put", "multi2", "--schedules", `[{"cron":"0 9 * * *","tz":"Asia/Tokyo"},{"at":"2030-01-01T00:00:00Z"}]`}, "multi2",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, "Asia/Tokyo", c.Job.Spec.TZ)
				require.Len(t, c.Job.Spec.Also, 1)
			}},
		{"put at", []string{"put", "once", "--at", "2030-05-06T07:08:09Z"}, "once",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, "2030-05-06T07:08:09Z", c.Job.Def().At)
			}},
		{"delete", []string{"delete", "j 1"}, "j 1",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) { require.Equal(t, codecs.OpDelete, c.Op) }},
		{"pause", []string{"pause", "j"}, "j",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) { require.Equal(t, codecs.OpPause, c.Op) }},
		{"pause with a note", []string{"pause", "j", "--note", "billing down, INC-4711"}, "j",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, codecs.OpPause, c.Op)
				require.Equal(t, "billing down, INC-4711", c.Note)
			}},
		{"put with max fires", []string{"put", "few", "--every", "1m", "--max-fires", "3"}, "few",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) { require.Equal(t, 3, c.Job.MaxFires) }},
		{"resume", []string{"resume", "j"}, "j",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) { require.Equal(t, codecs.OpResume, c.Op) }},
		{"fire", []string{"fire", "j"}, "j",
			func(t *testing.T, c codecs.Command, a httpapi.Accepted) {
				require.Equal(t, codecs.OpFire, c.Op)
				require.Regexp(t, `^t-[0-9a-f]{16}$`, a.TriggerID)
				require.Equal(t, "j@"+a.TriggerID, a.FireID)
				require.Equal(t, a.TriggerID, c.TriggerID)
				require.Nil(t, c.Payload)
			}},
		{"backfill", []string{"backfill", "j", "--from", "2026-01-01T00:00:00+01:00", "--to", "2026-01-02T00:00:00Z"}, "j",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, codecs.OpBackfill, c.Op)
				require.Equal(t, "2025-12-31T23:00:00Z", c.From.Format(time.RFC3339))
				require.Equal(t, "2026-01-02T00:00:00Z", c.To.Format(time.RFC3339))
			}},
		{"backfill cancel", []string{"backfill", "j", "--cancel"}, "j",
			func(t *testing.T, c codecs.Command, _ httpapi.Accepted) {
				require.Equal(t, codecs.OpCancelBackfill, c.Op)
			}},
		{"fire with trigger and payload", []string{"fire", "j", "--trigger-id", "x", "--payload", `{"b": [1]}`}, "j",
			func(t *testing.T, c codecs.Command, a httpapi.Accepted) {
				require.Equal(t, "x", c.TriggerID)
				require.Equal(t, "j@x", a.FireID)
				require.Equal(t, []byte(`{"b":[1]}`), c.Payload)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newAPI(t, "")
			out, err := run(t, append([]string{"jobs", "--api", api.url + "/"}, tc.args...)...)
			require.NoError(t, err)
			var a httpapi.Accepted
			require.NoError(t, json.Unmarshal([]byte(out), &a), "output: %s", out)
			require.Equal(t, tc.id, a.ID)

			recs := api.prod.records()
			require.Len(t, recs, 1)
			require.Equal(t, tc.id, string(recs[0].Key))
			require.Equal(t, "chronos-jobs", recs[0].Topic)
			c, err := codecs.DecodeCommand(recs[0].Key, recs[0].Value, codecs.DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, a.Op, c.Op)
			tc.check(t, c, a)
		})
	}
}

func TestJobsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		token string
		args  []string
		code  int
		parts []string
	}{
		{"bad cron", "", []string{"put", "j", "--cron", "every day"}, 1, []string{"400", "invalid_schedule", "cron:"}},
		{"no schedule", "", []string{"put", "j"}, 1, []string{"invalid_schedule", "exactly one of cron, every, at"}},
		{"schedules beside cron", "", []string{"put", "j", "--cron", "* * * * *", "--schedules", `[{"every":"1m"}]`}, 1, []string{"--cron/--every/--at, not both"}},
		{"bad member", "", []string{"put", "j", "--cron", "* * * * *", "--every", "1x"}, 1, []string{"400", "invalid_schedule", "schedules[1].every:"}},
		{"schedules typo", "", []string{"put", "j", "--schedules", `[{"cron":"0 9 * * *","timezone":"Asia/Tokyo"},{"every":"1h"}]`}, 1, []string{"--schedules", "schedules[0].timezone"}},
		{"dst without cron", "", []string{"put", "j", "--every", "1h", "--every", "90m", "--dst-gap", "skip"}, 1, []string{"apply to cron schedules only"}},
		{"bad exclude range", "", []string{"put", "j", "--every", "1m", "--exclude-range", "2026-01-01T00:00:00Z"}, 1, []string{"want FROM/TO"}},
		{"bad exclude calendar", "", []string{"put", "j", "--every", "1m", "--exclude-calendar", " x"}, 1, []string{"400", "exclude.calendars[0]:"}},
		{"bad tz", "", []string{"put", "j", "--cron", "* * * * *", "--tz", "Nowhere/Land"}, 1, []string{"tz:", "Nowhere/Land"}},
		{"bad calendar item", "", []string{"put", "j", "--cron", "0 0 * * 1#6"}, 1, []string{"400", "invalid_schedule", "cron:", "d#n"}},
		{"dst on every", "", []string{"put", "j", "--every", "1m", "--dst-gap", "skip"}, 1, []string{"400", "invalid_schedule", "dst:", "cron schedules only"}},
		{"max fires negative", "", []string{"put", "j", "--every", "1m", "--max-fires", "-1"}, 1, []string{"400", "max_fires:"}},
		{"jitter over the period", "", []string{"put", "j", "--every", "1m", "--jitter", "2m"}, 1, []string{"400", "jitter:", "longer than the period"}},
		{"bad dst overlap", "", []string{"put", "j", "--cron", "@daily", "--dst-overlap", "twice"}, 1, []string{"dst:", "want first, last or both"}},
		{"put invalid payload", "", []string{"put", "j", "--every", "1m", "--payload", "{nope"}, 1, []string{"--payload is not valid JSON"}},
		{"fire invalid payload", "", []string{"fire", "j", "--payload", "{nope"}, 1, []string{"--payload is not valid JSON"}},
		{"reserved id", "", []string{"delete", "__chronos/3"}, 1, []string{"reserved_id", "id:"}},
		{"missing token", "tok", []string{"pause", "j"}, 1, []string{"401", "unauthorized"}},
		{"wrong token", "tok", []string{"pause", "j", "--api-token", "nope"}, 1, []string{"401", "unauthorized"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newAPI(t, tc.token)
			out, err := run(t, append([]string{"jobs", "--api", api.url}, tc.args...)...)
			requireExit(t, err, tc.code, tc.parts...)
			require.Empty(t, out)
			require.Empty(t, api.prod.records())
		})
	}

	t.Run("right token", func(t *testing.T) {
		t.Parallel()
		api := newAPI(t, "tok")
		_, err := run(t, "jobs", "--api", api.url, "--api-token", "tok", "resume", "j")
		require.NoError(t, err)
		require.Len(t, api.prod.records(), 1)
	})

	t.Run("wrong arg count", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, "jobs", "put", "--every", "1m")
		require.Error(t, err)
	})
}

func TestJobsUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	for _, args := range [][]string{
		{"put", "j", "--every", "1m"},
		{"delete", "j"},
		{"fire", "j"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			_, err := run(t, append([]string{"jobs", "--api", "http://" + addr}, args...)...)
			requireExit(t, err, 2, "cannot reach the API", addr)
		})
	}
}

// TestCalendarsCommands: calendars put writes the normalized calendar to
// chronos-calendars under its name, delete its tombstone.
func TestCalendarsCommands(t *testing.T) {
	t.Parallel()
	api := newAPI(t, "")
	out, err := run(t, "calendars", "put", "de holidays", "--date", "2026-12-26", "--date", "2026-12-25", "--description", "Feiertage", "--api", api.url)
	require.NoError(t, err)
	require.Contains(t, out, `"dates":["2026-12-25","2026-12-26"]`)
	_, err = run(t, "calendars", "delete", "de holidays", "--api", api.url)
	require.NoError(t, err)
	recs := api.prod.records()
	require.Len(t, recs, 2)
	require.Equal(t, "chronos-calendars", recs[0].Topic)
	require.Equal(t, "de holidays", string(recs[0].Key))
	require.JSONEq(t, `{"dates":["2026-12-25","2026-12-26"],"description":"Feiertage"}`, string(recs[0].Value))
	require.Nil(t, recs[1].Value)
	_, err = run(t, "calendars", "put", "x", "--date", "2026-02-30", "--api", api.url)
	require.ErrorContains(t, err, "dates[0]")
}
