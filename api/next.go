package api

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/views"
)

// Bounds of GET /v1/jobs/{id}?next=N&from=T.
const (
	defaultNext = 5
	maxNext     = 1000
)

// nextQuery is the parsed ?next=N&from=T of GET /v1/jobs/{id}.
type nextQuery struct {
	n    int
	from time.Time // zero: from the job's next fire
	set  bool      // next or from given
}

// parseNext reads next and from, refusing any other query parameter.
func parseNext(q url.Values) (nextQuery, error) {
	nq := nextQuery{n: defaultNext}
	for k := range q {
		if k != "next" && k != "from" {
			return nq, &codecs.Error{Code: codecs.CodeUnknownField, Field: k, Reason: "unknown query parameter " + strconv.Quote(k) + "; use next, from"}
		}
		nq.set = true
	}
	n, ok := intParam(q, "next", defaultNext, 1, maxNext)
	if !ok {
		return nq, &codecs.Error{Code: codecs.CodeInvalidField, Field: "next", Reason: "next must be 1.." + strconv.Itoa(maxNext)}
	}
	nq.n = n
	if vs, ok := q["from"]; ok {
		// Given, it must be one time: empty or twice is invalid.
		t, err := time.Parse(time.RFC3339Nano, vs[0])
		if err != nil || len(vs) != 1 || codecs.CheckRecordTime(t) != nil {
			return nq, &codecs.Error{Code: codecs.CodeInvalidField, Field: "from", Reason: "from must be an RFC 3339 time from 1970 to 9999, like 2026-10-25T00:00:00+02:00"}
		}
		nq.from = t.UTC()
	}
	return nq, nil
}

// nextFires sets job.NextFires for nq: without from, the next n fires the
// job is owed (none unless it is active); with from, the n times of its
// schedule at or after from, whatever its state (to look at a DST change
// or next month).
func (s *Server) nextFires(job *views.Job, nq nextQuery) {
	if !nq.set {
		return
	}
	start := nq.from
	if start.IsZero() {
		if len(job.NextFires) == 0 {
			return
		}
		start = job.NextFires[0]
	}
	norm, err := job.Job.Validate(s.limits())
	if err != nil {
		return
	}
	sched, err := schedule.Parse(norm.Spec)
	if err != nil {
		return
	}
	if cals, ok := s.Calendars.(schedule.CalendarSource); ok {
		// Named calendars as they are now (the view's reader answers).
		sched = schedule.WithCalendars(sched, norm.Spec.Exclude, cals, nil)
	}
	job.NextFires = schedule.NextN(sched, start.Add(-time.Nanosecond), nq.n)
	if !job.LimitEnd.IsZero() {
		// max_fires ends the schedule at its last allowed time, as the
		// view's own next fires do (codecs.JobSchedule).
		for i, t := range job.NextFires {
			if t.After(job.LimitEnd) {
				job.NextFires = job.NextFires[:i]
				break
			}
		}
	}
}

// getJobNext parses the query of GET /v1/jobs/{id}; ok is false when it
// answered a problem.
func getJobNext(w http.ResponseWriter, r *http.Request) (nextQuery, bool) {
	nq, err := parseNext(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return nq, false
	}
	return nq, true
}
