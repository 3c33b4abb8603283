package api

import (
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// CalendarReader reads named calendars (views.Calendars).
type CalendarReader interface {
	Get(name string) (codecs.CalendarDef, bool, error)
}

// Calendar is a named calendar as the API shows it.
type Calendar struct {
	Name string `json:"name"`
	codecs.CalendarDef
}

func calendarRoutes() []route {
	return []route{
		{"GET /v1/calendars/{name}", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.getCalendar })},
		{"PUT /v1/calendars/{name}", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.putCalendar })},
		{"DELETE /v1/calendars/{name}", v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.deleteCalendar })},
	}
}

// calendarName answers a problem and returns false when the path's name
// is not a calendar name, or is outside the caller's prefix: a token
// confined to a prefix reads and writes only the calendars named with it
// (as its jobs and buckets); any job may name any calendar.
func calendarName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if p := principal(r); !p.owns(name) {
		writeProblem(w, http.StatusForbidden, "forbidden", "name",
			fmt.Sprintf("token %q is confined to names starting with %q", p.Name, p.Prefix))
		return "", false
	}
	if err := codecs.ValidateCalendarName(name); err != nil {
		writeError(w, err)
		return "", false
	}
	return name, true
}

// CalendarDeleted answers DELETE /v1/calendars/{name}.
type CalendarDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) getCalendar(w http.ResponseWriter, r *http.Request) {
	name, ok := calendarName(w, r)
	if !ok {
		return
	}
	if s.Calendars == nil {
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", "this instance serves no calendar view")
		return
	}
	def, found, err := s.Calendars.Get(name)
	switch {
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
	case !found:
		writeProblem(w, http.StatusNotFound, "unknown_calendar", "name", fmt.Sprintf("no calendar %q", name))
	default:
		writeJSON(w, http.StatusOK, Calendar{Name: name, CalendarDef: def})
	}
}

// putCalendar writes the calendar to chronos-calendars; every job that
// names it follows from its next time on.
func (s *Server) putCalendar(w http.ResponseWriter, r *http.Request) {
	name, ok := calendarName(w, r)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r, false)
	if !ok {
		return
	}
	def, _, err := codecs.DecodeCalendarDef(body)
	if err != nil {
		writeError(w, err)
		return
	}
	rec := &kgo.Record{Topic: string(s.Names.Calendars()), Key: []byte(name), Value: codecs.EncodeCalendarDef(def), Headers: actor(r)}
	if !s.produceRecord(w, r, rec) {
		return
	}
	writeJSON(w, http.StatusOK, Calendar{Name: name, CalendarDef: def})
}

// deleteCalendar writes the calendar's tombstone: jobs that name it then
// exclude nothing by it.
func (s *Server) deleteCalendar(w http.ResponseWriter, r *http.Request) {
	name, ok := calendarName(w, r)
	if !ok {
		return
	}
	if !s.produceRecord(w, r, &kgo.Record{Topic: string(s.Names.Calendars()), Key: []byte(name), Headers: actor(r)}) {
		return
	}
	writeJSON(w, http.StatusOK, CalendarDeleted{Name: name, Deleted: true})
}
