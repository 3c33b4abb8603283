package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/topology"
	"github.com/chronos-scheduler/chronos/views"
)

// fakeCalendars serves the calendars the producer wrote (a view that
// follows at once).
type fakeCalendars struct{ prod *fakeProducer }

func (f fakeCalendars) Get(name string) (codecs.CalendarDef, bool, error) {
	f.prod.mu.Lock()
	defer f.prod.mu.Unlock()
	var def codecs.CalendarDef
	found := false
	for _, r := range f.prod.recs {
		if string(r.Key) != name {
			continue
		}
		found = r.Value != nil
		if found {
			var err error
			if def, _, err = codecs.DecodeCalendarDef(r.Value); err != nil {
				return def, false, err
			}
		}
	}
	return def, found, nil
}

// TestCalendarsAPI: PUT writes the normalized calendar to
// chronos-calendars under its name, GET reads it back, DELETE writes its
// tombstone; bad names, dates and fields are refused with the field.
func TestCalendarsAPI(t *testing.T) {
	t.Parallel()
	prod := &fakeProducer{}
	h := (&api.Server{Names: topology.Names{Prefix: "t-"}, Producer: prod, Calendars: fakeCalendars{prod}}).Handler()
	do := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	code, body := do(http.MethodPut, "/v1/calendars/de-holidays", `{"dates":["2026-12-26","2026-12-25","2026-12-25"],"description":"Feiertage"}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, []any{"2026-12-25", "2026-12-26"}, body["dates"])
	require.Len(t, prod.recs, 1)
	require.Equal(t, "t-chronos-calendars", prod.recs[0].Topic)
	require.Equal(t, "de-holidays", string(prod.recs[0].Key))
	require.JSONEq(t, `{"dates":["2026-12-25","2026-12-26"],"description":"Feiertage"}`, string(prod.recs[0].Value))

	code, body = do(http.MethodGet, "/v1/calendars/de-holidays", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "de-holidays", body["name"])
	require.Equal(t, "Feiertage", body["description"])

	code, _ = do(http.MethodDelete, "/v1/calendars/de-holidays", "")
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, prod.recs[1].Value, "a tombstone")
	code, body = do(http.MethodGet, "/v1/calendars/de-holidays", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "unknown_calendar", body["code"])

	for _, c := range []struct{ path, body, code, field string }{
		{"/v1/calendars/x", `{"dates":["2026-02-30"]}`, codecs.CodeInvalidField, "dates[0]"},
		{"/v1/calendars/x", `{"dates":["2026-01-01"],"days":[]}`, codecs.CodeUnknownField, "days"},
		{"/v1/calendars/x", `{"dates":["2026-01-01"],"dates":[]}`, codecs.CodeMalformed, "dates"},
		{"/v1/calendars/x", `{"dates":["2026-01-01"],"description":"` + strings.Repeat("x", 1025) + `"}`, codecs.CodeInvalidField, "description"},
		{"/v1/calendars/%20x", `{"dates":[]}`, codecs.CodeInvalidField, "name"},
		{"/v1/calendars/a%07b", `{"dates":[]}`, codecs.CodeInvalidField, "name"},
		{"/v1/calendars/x", `null`, codecs.CodeMalformed, ""},
		{"/v1/calendars/x", ` ["2026-01-01"]`, codecs.CodeMalformed, ""},
	} {
		code, body := do(http.MethodPut, c.path, c.body)
		require.Equal(t, http.StatusBadRequest, code, "%s %s", c.path, c.body)
		require.Equal(t, c.code, body["code"], "%s %v", c.body, body)
		if c.field != "" {
			require.Equal(t, c.field, body["field"], "%s %v", c.body, body)
		}
	}
	many := `{"dates":["2026-01-01"` + strings.Repeat(`,"2026-01-01"`, codecs.MaxCalendarDates) + `]}`
	code, body = do(http.MethodPut, "/v1/calendars/x", many)
	require.Equal(t, http.StatusBadRequest, code, "%v", body)
	require.Equal(t, "dates", body["field"])
	require.Len(t, prod.recs, 2, "nothing refused was written")
}

// daysCalendars is a calendar reader that also answers HasDate, as the
// instance's view does.
type daysCalendars map[string][]schedule.Date

func (d daysCalendars) Get(name string) (codecs.CalendarDef, bool, error) {
	days, ok := d[name]
	var def codecs.CalendarDef
	for _, day := range days {
		def.Dates = append(def.Dates, day.String())
	}
	return def, ok, nil
}

func (d daysCalendars) HasDate(name string, day schedule.Date) bool {
	return slices.Contains(d[name], day)
}

// TestGetJobNextFromSkipsCalendars: ?from next fires of a job that names
// calendars skip their dates as they are now (an unknown one skips none).
func TestGetJobNextFromSkipsCalendars(t *testing.T) {
	t.Parallel()
	def := codecs.JobDef{Cron: "0 9 * * *", TZ: "Europe/Berlin", Exclude: &codecs.ExcludeDef{Calendars: []string{"hol", "unknown"}}}
	norm, err := def.Validate(codecs.DefaultLimits())
	require.NoError(t, err)
	jobs := newFakeJobs(views.Job{ID: "j", Version: 1, Status: "paused", Job: norm.Def()})
	cals := daysCalendars{"hol": {{Year: 2026, Month: 12, Day: 25}, {Year: 2026, Month: 12, Day: 26}}}
	f := newFixture(t, func(s *api.Server) { s.Jobs, s.Calendars = jobs, cals })
	resp, b := f.do(t, request{method: "GET", path: "/v1/jobs/j?next=3&from=2026-12-24T00:00:00Z"})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var got []string
	for _, at := range decodeJob(t, resp, b).NextFires {
		got = append(got, at.UTC().Format(time.RFC3339))
	}
	require.Equal(t, []string{"2026-12-24T08:00:00Z", "2026-12-27T08:00:00Z", "2026-12-28T08:00:00Z"}, got)
}
