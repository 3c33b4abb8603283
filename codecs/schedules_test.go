package codecs_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// randomSetDef draws a definition with several schedules and exclusions.
func randomSetDef(r *rand.Rand) codecs.JobDef {
	zones := []string{"", "UTC", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago"}
	d := codecs.JobDef{TZ: zones[r.IntN(len(zones))]}
	for range 1 + r.IntN(4) {
		sd := codecs.ScheduleDef{TZ: zones[r.IntN(len(zones))]}
		switch r.IntN(3) {
		case 0:
			sd.Every = fmt.Sprintf("%dm", 1+r.IntN(600))
		case 1:
			sd.At = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e6)) * time.Second).Format(time.RFC3339)
		default:
			sd.Cron = []string{"0 9 * * 1-5", "30 2 * * *", "0 0 L * *", "*/15 * * * *"}[r.IntN(4)]
			if r.IntN(2) == 0 {
				sd.DST = &codecs.DSTDef{Gap: "skip", Overlap: "both"}
			}
		}
		d.Schedules = append(d.Schedules, sd)
	}
	if r.IntN(3) > 0 {
		d.Exclude = &codecs.ExcludeDef{}
		for range r.IntN(4) {
			d.Exclude.Dates = append(d.Exclude.Dates, time.Date(2026, 1, 1+r.IntN(365), 0, 0, 0, 0, time.UTC).Format(time.DateOnly))
		}
		for i := range r.IntN(3) {
			d.Exclude.Calendars = append(d.Exclude.Calendars, fmt.Sprintf("cal-%d", i))
		}
		for range r.IntN(3) {
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e7)) * time.Second)
			d.Exclude.Ranges = append(d.Exclude.Ranges, codecs.RangeDef{From: from.Format(time.RFC3339), To: from.Add(time.Duration(1+r.IntN(1e6)) * time.Second).Format(time.RFC3339)})
		}
	}
	return d
}

// TestScheduleSetRoundTrip: a definition with several schedules and
// exclusions survives Def, JSON, strict decoding and the table record,
// and fires the same times after each.
func TestScheduleSetRoundTrip(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 2))
		d := randomSetDef(r)
		j, err := d.Validate(codecs.DefaultLimits())
		require.NoError(t, err, "seed %d: %+v", seed, d)
		b, err := json.Marshal(j.Def())
		require.NoError(t, err)
		d2, err := codecs.DecodeJobDef(b)
		require.NoError(t, err, "%s", b)
		j2, err := d2.Validate(codecs.DefaultLimits())
		require.NoError(t, err, "%s", b)
		require.Equal(t, j, j2, "seed %d: %s", seed, b)
		rec := codecs.JobRecord{Version: 1, Status: codecs.StatusActive, Job: j}
		got, err := codecs.DecodeJobRecord(codecs.EncodeJobRecord(&rec))
		require.NoError(t, err)
		require.Equal(t, normRecord(rec), *got, "seed %d", seed)
		a, b2 := mustSchedule(t, j), mustSchedule(t, got.Job)
		for at, at2 := from, from; !at.IsZero() && at.Before(from.AddDate(0, 2, 0)); {
			at, at2 = a.Next(at), b2.Next(at2)
			require.True(t, at.Equal(at2), "seed %d: %v vs %v", seed, at, at2)
		}
	}
}

// TestScheduleSetRejects: every malformed schedules or exclude field is
// refused with its own field name.
func TestScheduleSetRejects(t *testing.T) {
	t.Parallel()
	many := `{"schedules":[` + strings.Repeat(`{"every":"1h"},`, 16) + `{"every":"1h"}]}`
	dates := `{"every":"1h","exclude":{"dates":[` + strings.Repeat(`"2026-01-01",`, 1000) + `"2026-01-01"]}}`
	for _, c := range []struct{ body, code, field string }{
		{`{"cron":"@daily","schedules":[{"every":"1h"}]}`, codecs.CodeInvalidSchedule, "schedules"},
		{`{"dst":{"gap":"skip"},"schedules":[{"cron":"@daily"}]}`, codecs.CodeInvalidSchedule, "schedules"},
		{`{"dst":{},"cron":"","every":null,"schedules":[{"cron":"@daily"}, {"cron":"@daily","every":""}],"exclude":{"dates":[],"ranges":null}}`, "", ""},
		{many, codecs.CodeInvalidSchedule, "schedules"},
		{`{"schedules":[{"every":"1h"},{"cron":"61 * * * *"}]}`, codecs.CodeInvalidSchedule, "schedules[1].cron"},
		{`{"schedules":[{"every":"1h"},{"every":"1x"}]}`, codecs.CodeInvalidSchedule, "schedules[1].every"},
		{`{"schedules":[{"every":"1h"},{"at":"tomorrow"}]}`, codecs.CodeInvalidSchedule, "schedules[1].at"},
		{`{"schedules":[{"cron":"@daily","tz":"Nope/Nope"}]}`, codecs.CodeInvalidSchedule, "schedules[0].tz"},
		{`{"schedules":[{"every":"1h","dst":{"gap":"skip"}}]}`, codecs.CodeInvalidSchedule, "schedules[0].dst"},
		{`{"schedules":[{}]}`, codecs.CodeInvalidSchedule, "schedules[0].schedule"},
		{`{"schedules":[{"every":"1h","start":"2026-01-01T00:00:00Z"}]}`, codecs.CodeUnknownField, "schedules[0].start"},
		{`{"schedules":[{"every":"1h","Cron":"x"}]}`, codecs.CodeUnknownField, "schedules[0].Cron"},
		{`{"schedules":[{"every":"1h","every":"2h"}]}`, codecs.CodeMalformed, "schedules[0].every"},
		{`{"every":"1h","exclude":{"dates":["2026-02-30"]}}`, codecs.CodeInvalidSchedule, "exclude.dates[0]"},
		{`{"every":"1h","exclude":{"dates":["25.12.2026"]}}`, codecs.CodeInvalidSchedule, "exclude.dates[0]"},
		{dates, codecs.CodeInvalidSchedule, "exclude.dates"},
		{`{"every":"1h","exclude":{"ranges":[{"from":"2026-01-02T00:00:00Z","to":"2026-01-01T00:00:00Z"}]}}`, codecs.CodeInvalidSchedule, "exclude.ranges[0]"},
		{`{"every":"1h","exclude":{"ranges":[{"from":"2026-01-02T00:00:00Z"}]}}`, codecs.CodeInvalidSchedule, "exclude.ranges[0]"},
		{`{"every":"1h","exclude":{"ranges":[{"from":"x","to":"2026-01-01T00:00:00Z"}]}}`, codecs.CodeInvalidSchedule, "exclude.ranges[0].from"},
		{`{"every":"1h","exclude":{"ranges":[{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","until":"x"}]}}`, codecs.CodeUnknownField, "exclude.ranges[0].until"},
		{`{"every":"1h","exclude":{"days":["2026-01-01"]}}`, codecs.CodeUnknownField, "days"},
		{`{"every":"1h","tz":"Nope/Nope","exclude":{"dates":["2026-01-01"]}}`, codecs.CodeInvalidSchedule, "tz"},
		// Adversary 14c: two members a microsecond apart after the first
		// 1000 fires, jitter 2us: refused (it could lose a fire).
		{`{"schedules":[{"every":"1h"},{"at":"2030-01-01T00:00:00.000001Z"}],"jitter":"2us"}`, codecs.CodeInvalidField, "jitter"},
		{`{"schedules":[{"every":"1h"},{"cron":"@daily"}],"jitter":"1s"}`, codecs.CodeInvalidField, "jitter"},
		// Adversary 14c: a jittered job naming a calendar was walked one
		// fire at a time through each excluded day, at every due decision
		// and every GET: refused.
		{`{"every":"1s","jitter":"500ms","exclude":{"calendars":["holidays"]}}`, codecs.CodeInvalidField, "jitter"},
		{`{"cron":"0 9 * * *","tz":"Europe/Berlin","jitter":"30s","exclude":{"dates":["2026-12-25"],"calendars":["de"]}}`, codecs.CodeInvalidField, "jitter"},
		// Adversary 14c: 16 per-second schedules with max_fires 100000
		// cost seconds per count: at most 100000/16.
		{`{"schedules":[` + strings.Repeat(`{"cron":"* * * * * *"},`, 15) + `{"cron":"* * * * * *"}],"max_fires":6251}`, codecs.CodeInvalidField, "max_fires"},
		{`{"schedules":[` + strings.Repeat(`{"cron":"* * * * * *"},`, 15) + `{"cron":"* * * * * *"}],"max_fires":6250}`, "", ""},
		{`{"schedules":[{"every":"1h"},{"cron":"@daily"}],"max_fires":50001}`, codecs.CodeInvalidField, "max_fires"},
		{`{"schedules":[{"every":"1h"},{"cron":"@daily"}],"max_fires":50000,"jitter":"0s"}`, "", ""},
		{`{"every":"1h","exclude":{"calendars":["a","a"]}}`, codecs.CodeInvalidSchedule, "exclude.calendars[1]"},
		{`{"every":"1h","exclude":{"calendars":[""]}}`, codecs.CodeInvalidSchedule, "exclude.calendars[0]"},
		{`{"every":"1h","exclude":{"calendars":[" x"]}}`, codecs.CodeInvalidSchedule, "exclude.calendars[0]"},
		{`{"every":"1h","exclude":{"calendars":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}}`, codecs.CodeInvalidSchedule, "exclude.calendars"},
	} {
		d, err := codecs.DecodeJobDef([]byte(c.body))
		if err == nil {
			_, err = d.Validate(codecs.DefaultLimits())
		}
		if c.code == "" {
			require.NoError(t, err, c.body) // "not set" spelled as null, "" or {}
			continue
		}
		requireCode(t, err, c.code, c.field)
	}
}

func mustSchedule(t *testing.T, j codecs.Job) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(j.Spec)
	require.NoError(t, err)
	return s
}

// FuzzDecodeCalendarDef decodes arbitrary calendar bodies: errors are
// *codecs.Error; a decoded calendar has its dates sorted, each once, and
// re-encodes to itself.
func FuzzDecodeCalendarDef(f *testing.F) {
	for _, s := range []string{
		`{"dates":["2026-12-25","2026-01-01","2026-12-25"],"description":"x"}`,
		`{"dates":[]}`, `{"dates":null}`, `{"Dates":[]}`, `{"dates":["2026-02-30"]}`, `{"dates":[],"dates":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		def, days, err := codecs.DecodeCalendarDef(b)
		if err != nil {
			var e *codecs.Error
			require.ErrorAs(t, err, &e)
			return
		}
		require.Len(t, def.Dates, len(days))
		for i := 1; i < len(days); i++ {
			require.Equal(t, -1, days[i-1].Compare(days[i]))
		}
		again, _, err := codecs.DecodeCalendarDef(codecs.EncodeCalendarDef(def))
		require.NoError(t, err)
		require.NotNil(t, def.Dates)
		require.Equal(t, def, again)
	})
}

// TestBackfillLimitOfSeveralSchedules: a backfill of a job with n
// schedules covers at most MaxBackfillFires / n times (adversary 14c:
// counting 100000 times of 16 per-second schedules took ~1.8 s, in the
// API and again in the shard processor).
func TestBackfillLimitOfSeveralSchedules(t *testing.T) {
	t.Parallel()
	var ms []codecs.ScheduleDef
	for range 16 {
		ms = append(ms, codecs.ScheduleDef{Cron: "* * * * * *"})
	}
	ms[1].TZ = "Europe/Berlin" // same instants: the union fires once a second
	job, err := codecs.JobDef{Schedules: ms}.Validate(codecs.DefaultLimits())
	require.NoError(t, err)
	limit := codecs.BackfillLimit(job.Spec)
	require.Equal(t, int64(codecs.MaxBackfillFires/16), limit)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, _, err := codecs.CheckBackfill(job.Spec, from, from.Add(time.Duration(limit)*time.Second), from.AddDate(1, 0, 0))
	require.NoError(t, err)
	require.Equal(t, limit, n)
	_, countErr, err := codecs.CheckBackfill(job.Spec, from, from.Add(time.Duration(limit+1)*time.Second), from.AddDate(1, 0, 0))
	requireCode(t, err, codecs.CodeInvalidField, "to")
	require.True(t, countErr)
}
