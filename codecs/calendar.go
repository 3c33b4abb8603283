package codecs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/chronos-scheduler/chronos/schedule"
)

// Limits of a named calendar.
const (
	// MaxCalendarDates is the most dates one calendar holds (so that the
	// largest calendar fits the API's default request limit of 80 KiB).
	MaxCalendarDates = 5000
	// MaxCalendarNameLen is the longest calendar name in bytes.
	MaxCalendarNameLen = 256
	// MaxCalendarDescription is the longest description in bytes.
	MaxCalendarDescription = 1024
)

// CalendarDef is a named calendar as written in JSON: the value of a
// record on chronos-calendars (key: its name) and the body of
// PUT /v1/calendars/{name}. Dates are days (YYYY-MM-DD); a job that names
// the calendar in exclude.calendars does not fire on them, in its tz.
type CalendarDef struct {
	Dates       []string `json:"dates"`
	Description string   `json:"description,omitempty"`
}

// ValidateCalendarName checks a calendar's name: the rules of a bucket
// name (docs/topics.md, "Ids and names"), not empty.
func ValidateCalendarName(name string) error {
	if name == "" {
		return errorf(CodeInvalidField, "name", "a calendar needs a name")
	}
	if err := checkName("calendar name", "name", CodeInvalidField, name, MaxCalendarNameLen); err != nil {
		return err
	}
	return nil
}

// DecodeCalendarDef parses a calendar strictly (exact field names, no
// unknown fields, no key twice) and validates it; the result has its
// dates sorted, each once.
func DecodeCalendarDef(b []byte) (CalendarDef, []schedule.Date, error) {
	var c CalendarDef
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return CalendarDef{}, nil, errorf(CodeMalformed, "", "a calendar is a JSON object like {\"dates\": [\"2026-12-25\"]}")
	}
	if err := strictUnmarshal(b, &c, calendarShape); err != nil {
		return CalendarDef{}, nil, err
	}
	if len(c.Dates) > MaxCalendarDates {
		return CalendarDef{}, nil, errorf(CodeInvalidField, "dates", "%d dates, the most is %d", len(c.Dates), MaxCalendarDates)
	}
	if len(c.Description) > MaxCalendarDescription {
		return CalendarDef{}, nil, errorf(CodeInvalidField, "description", "%d bytes, the most is %d", len(c.Description), MaxCalendarDescription)
	}
	days := make([]schedule.Date, 0, len(c.Dates))
	for i, s := range c.Dates {
		d, err := schedule.ParseDate(s)
		if err != nil {
			return CalendarDef{}, nil, errorf(CodeInvalidField, "dates["+strconv.Itoa(i)+"]", "%s", Truncate(err.Error(), 300))
		}
		days = append(days, d)
	}
	slices.SortFunc(days, func(a, b schedule.Date) int { return a.Compare(b) })
	days = slices.Compact(days)
	c.Dates = make([]string, 0, len(days)) // never nil: "dates": [] when none
	for _, d := range days {
		c.Dates = append(c.Dates, d.String())
	}
	return c, days, nil
}

// EncodeCalendarDef returns c as compact JSON.
func EncodeCalendarDef(c CalendarDef) []byte {
	if c.Dates == nil {
		c.Dates = []string{}
	}
	b, _ := json.Marshal(c) // strings only: cannot fail
	return b
}
