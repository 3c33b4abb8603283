package codecs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/chronos-scheduler/chronos/schedule"
)

// Misfire policies for fires later than the job's misfire grace.
const (
	MisfireSkip     = "skip"      // count them as missed, fire none
	MisfireFireOnce = "fire_once" // one fire for the latest missed time (default)
	MisfireFireAll  = "fire_all"  // fire each, at most MaxCatchUp per advance
)

// Defaults and limits of job definitions.
const (
	DefaultMisfireGrace = 60 * time.Second
	MaxMisfireGrace     = 7 * 24 * time.Hour
	DefaultMaxPayload   = 64 << 10
	MaxIDLen            = 256
	// MaxMaxFires is the largest max_fires.
	MaxMaxFires  = 100_000
	MaxBucketLen = 256
)

// Limits bounds what a command may carry. The zero value is not valid; use
// DefaultLimits.
type Limits struct {
	// MaxPayload is the largest payload in bytes (default 64 KiB).
	MaxPayload int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits { return Limits{MaxPayload: DefaultMaxPayload} }

// JobDef is a job definition as written in JSON: the body of PUT /v1/jobs/{id}
// and the "job" field of a put command. Exactly one of Cron, Every, At.
type JobDef struct {
	Cron          string          `json:"cron,omitempty"`
	Every         string          `json:"every,omitempty"`
	At            string          `json:"at,omitempty"`
	TZ            string          `json:"tz,omitempty"`
	Start         string          `json:"start,omitempty"`
	End           string          `json:"end,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Bucket        string          `json:"bucket,omitempty"`
	MisfirePolicy string          `json:"misfire_policy,omitempty"`
	MisfireGrace  string          `json:"misfire_grace,omitempty"`
	DST           *DSTDef         `json:"dst,omitempty"`
	// Jitter delays each scheduled fire by a deterministic offset in
	// [0, jitter) derived from its fire_id (see JitterOffset).
	Jitter string `json:"jitter,omitempty"`
	// MaxFires, when set (1 to MaxMaxFires), stops the job after that many
	// scheduled times (docs/schedules.md#max_fires).
	MaxFires int `json:"max_fires,omitempty"`
	// Schedules, instead of cron/every/at, gives the job several
	// schedules: it fires at their union, once per instant
	// (docs/schedules.md#several-schedules).
	Schedules []ScheduleDef `json:"schedules,omitempty"`
	// Exclude lists times the job does not fire.
	Exclude *ExcludeDef `json:"exclude,omitempty"`
}

// ScheduleDef is one of a job's several schedules: exactly one of Cron,
// Every, At; TZ defaults to the job's tz; DST applies to cron.
type ScheduleDef struct {
	Cron  string  `json:"cron,omitempty"`
	Every string  `json:"every,omitempty"`
	At    string  `json:"at,omitempty"`
	TZ    string  `json:"tz,omitempty"`
	DST   *DSTDef `json:"dst,omitempty"`
}

// ExcludeDef lists the times a job does not fire: whole days in the job's
// tz (YYYY-MM-DD) and ranges of instants [from, to) in RFC 3339.
type ExcludeDef struct {
	Dates  []string   `json:"dates,omitempty"`
	Ranges []RangeDef `json:"ranges,omitempty"`
	// Calendars names calendars (chronos-calendars) whose dates, in the
	// job's tz, the job does not fire on, as they are at each fire.
	Calendars []string `json:"calendars,omitempty"`
}

// RangeDef is a span of instants [From, To) in RFC 3339.
type RangeDef struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// DSTDef is a cron job's daylight-saving policy as written in JSON:
// gap "shift" (default) or "skip"; overlap "first" (default), "last" or
// "both". See schedule.DST.
type DSTDef struct {
	Gap     string `json:"gap,omitempty"`
	Overlap string `json:"overlap,omitempty"`
}

// Job is a validated job definition.
type Job struct {
	Spec          schedule.Spec
	Payload       []byte // compact JSON, nil when none
	Bucket        string
	MisfirePolicy string
	MisfireGrace  time.Duration
	Jitter        time.Duration // 0: none
	MaxFires      int           // 0: no limit
}

// Validate turns a definition into a Job, reporting the first problem as *Error.
func (d JobDef) Validate(lim Limits) (Job, error) {
	spec, err := d.spec()
	if err != nil {
		return Job{}, err
	}
	sched, err := schedule.Parse(spec)
	if err != nil {
		var se *schedule.Error
		if errors.As(err, &se) {
			return Job{}, &Error{Code: CodeInvalidSchedule, Field: se.Field, Reason: se.Reason}
		}
		return Job{}, errorf(CodeInvalidSchedule, "schedule", "%v", err)
	}
	j := Job{Spec: spec, Bucket: d.Bucket, MisfirePolicy: d.MisfirePolicy, MisfireGrace: DefaultMisfireGrace}
	if j.Payload, err = compactPayload(d.Payload, lim); err != nil {
		return Job{}, err
	}
	if err := validateBucket(d.Bucket); err != nil {
		return Job{}, err
	}
	switch d.MisfirePolicy {
	case "":
		j.MisfirePolicy = MisfireFireOnce
	case MisfireSkip, MisfireFireOnce, MisfireFireAll:
	default:
		return Job{}, errorf(CodeInvalidField, "misfire_policy", "unknown policy %q; want skip, fire_once or fire_all", d.MisfirePolicy)
	}
	if d.MisfireGrace != "" {
		g, err := time.ParseDuration(d.MisfireGrace)
		if err != nil || g < 0 || g > MaxMisfireGrace {
			return Job{}, errorf(CodeInvalidField, "misfire_grace", "want a duration from 0s to %s, got %q", MaxMisfireGrace, d.MisfireGrace)
		}
		j.MisfireGrace = g
	}
	if d.Jitter != "" {
		if j.Jitter, err = validateJitter(d.Jitter, spec, sched); err != nil {
			return Job{}, err
		}
		if j.Jitter > 0 && len(spec.Also) > 0 {
			// Two members may come closer than the jitter at any time,
			// not only among the first fires a check can read: their
			// due times could swap or meet, and a fire be lost.
			return Job{}, errorf(CodeInvalidField, "jitter", "a jitter applies to a job with one schedule: with several, two of their times may come closer than the jitter; put them in separate jobs to jitter them")
		}
		if j.Jitter > 0 && len(spec.Exclude.Calendars) > 0 {
			// A named calendar is looked up at each fire; a jittered
			// time's day is its scheduled time's, so skipping a calendar
			// day walked it one fire at a time (adversary 14c: 86,401
			// lookups per due decision for one holiday of an every-1s job).
			return Job{}, errorf(CodeInvalidField, "jitter", "a jitter does not combine with exclude.calendars: use exclude.dates for the job's own days off, or no jitter")
		}
	}
	if d.MaxFires < 0 || d.MaxFires > MaxMaxFires {
		return Job{}, errorf(CodeInvalidField, "max_fires", "want 1 to %d (0 or absent: no limit), got %d", MaxMaxFires, d.MaxFires)
	}
	if n := 1 + len(spec.Also); d.MaxFires > MaxMaxFires/n {
		// Counting what a limit allows walks the schedule once per fire,
		// and each step of a union steps every member: the same work as
		// one schedule's largest limit.
		return Job{}, errorf(CodeInvalidField, "max_fires", "with %d schedules, max_fires is at most %d (%d divided by their count), got %d", n, MaxMaxFires/n, MaxMaxFires, d.MaxFires)
	}
	j.MaxFires = d.MaxFires
	return j, nil
}

func (d JobDef) spec() (schedule.Spec, error) {
	var s schedule.Spec
	if len(d.Schedules) == 0 {
		m, err := ScheduleDef{Cron: d.Cron, Every: d.Every, At: d.At, TZ: d.TZ, DST: d.DST}.spec("")
		if err != nil {
			return s, err
		}
		s = m
	} else {
		if err := d.checkSchedules(); err != nil {
			return s, err
		}
		for i, sd := range d.Schedules {
			if sd.TZ == "" {
				sd.TZ = d.TZ
			}
			m, err := sd.spec(fmt.Sprintf("schedules[%d].", i))
			if err != nil {
				return s, err
			}
			if i == 0 {
				s = m
			} else {
				s.Also = append(s.Also, m)
			}
		}
	}
	var err error
	if s.Start, err = parseInstant("start", d.Start); err != nil {
		return s, err
	}
	if s.End, err = parseInstant("end", d.End); err != nil {
		return s, err
	}
	if d.Exclude != nil {
		if s.Exclude, err = d.Exclude.exclusions(d.TZ); err != nil {
			return s, err
		}
	}
	return s, nil
}

// checkSchedules checks the shape of a definition that uses schedules.
func (d JobDef) checkSchedules() error {
	if d.Cron != "" || d.Every != "" || d.At != "" || (d.DST != nil && *d.DST != DSTDef{}) {
		return errorf(CodeInvalidSchedule, "schedules", "give either cron, every or at (with dst) at the top level, or schedules, not both")
	}
	if len(d.Schedules) > schedule.MaxSpecs {
		return errorf(CodeInvalidSchedule, "schedules", "%d schedules, the most is %d", len(d.Schedules), schedule.MaxSpecs)
	}
	return nil
}

// spec turns one schedule into a Spec without bounds; prefix names it in
// errors ("schedules[2]." or "").
func (sd ScheduleDef) spec(prefix string) (schedule.Spec, error) {
	s := schedule.Spec{Cron: sd.Cron, TZ: sd.TZ}
	if sd.DST != nil {
		s.DST = schedule.DST{Gap: sd.DST.Gap, Overlap: sd.DST.Overlap}.Normalize()
	}
	var err error
	if sd.Every != "" {
		if s.Every, err = time.ParseDuration(sd.Every); err != nil {
			return s, errorf(CodeInvalidSchedule, prefix+"every", "not a duration (like 30s, 5m, 1h): %q", sd.Every)
		}
		if s.Every <= 0 {
			return s, errorf(CodeInvalidSchedule, prefix+"every", "must be at least 1s, got %q", sd.Every)
		}
	}
	if s.At, err = parseInstant(prefix+"at", sd.At); err != nil {
		return s, err
	}
	if prefix != "" {
		// Each member alone, so that an error names it.
		if _, err := schedule.Parse(s); err != nil {
			var se *schedule.Error
			if errors.As(err, &se) {
				return s, &Error{Code: CodeInvalidSchedule, Field: prefix + se.Field, Reason: se.Reason}
			}
			return s, err
		}
	}
	return s, nil
}

// parseInstant parses an RFC 3339 field of a definition ("" is unset).
func parseInstant(name, in string) (time.Time, error) {
	if in == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, in)
	if err != nil {
		return t, errorf(CodeInvalidSchedule, name, "not an RFC 3339 time (like 2026-01-02T15:04:05Z): %q", in)
	}
	if t.IsZero() {
		// The zero instant is how "not set" is stored: refuse it
		// rather than silently treat it as absent.
		return t, errorf(CodeInvalidSchedule, name, "%q is the zero time (0001-01-01T00:00:00Z), which Chronos reserves for \"not set\"; omit %s or give a later time", in, name)
	}
	// UTC, as stored and as Def writes it: the year range is checked
	// on the UTC date, so every valid definition survives Def.
	return t.UTC(), nil
}

// exclusions parses x, whose dates are days in zone tz.
func (x *ExcludeDef) exclusions(tz string) (schedule.Exclusions, error) {
	out := schedule.Exclusions{TZ: tz}
	if len(x.Dates) == 0 && len(x.Ranges) == 0 && len(x.Calendars) == 0 {
		return schedule.Exclusions{}, nil // excludes nothing: stored as absent
	}
	if len(x.Calendars) > schedule.MaxExcludeCalendars {
		return out, errorf(CodeInvalidSchedule, "exclude.calendars", "%d calendars, the most is %d", len(x.Calendars), schedule.MaxExcludeCalendars)
	}
	for i, name := range x.Calendars {
		if err := ValidateCalendarName(name); err != nil {
			return out, errorf(CodeInvalidSchedule, fmt.Sprintf("exclude.calendars[%d]", i), "%s", err.(*Error).Reason)
		}
		if slices.Contains(x.Calendars[:i], name) {
			return out, errorf(CodeInvalidSchedule, fmt.Sprintf("exclude.calendars[%d]", i), "calendar %q is named twice", name)
		}
		out.Calendars = append(out.Calendars, name)
	}
	if len(x.Dates) > schedule.MaxExcludeDates {
		return out, errorf(CodeInvalidSchedule, "exclude.dates", "%d dates, the most is %d", len(x.Dates), schedule.MaxExcludeDates)
	}
	if len(x.Ranges) > schedule.MaxExcludeRanges {
		return out, errorf(CodeInvalidSchedule, "exclude.ranges", "%d ranges, the most is %d", len(x.Ranges), schedule.MaxExcludeRanges)
	}
	for i, in := range x.Dates {
		d, err := schedule.ParseDate(in)
		if err != nil {
			return out, errorf(CodeInvalidSchedule, fmt.Sprintf("exclude.dates[%d]", i), "%v", Truncate(err.Error(), 300))
		}
		out.Dates = append(out.Dates, d)
	}
	for i, r := range x.Ranges {
		name := fmt.Sprintf("exclude.ranges[%d]", i)
		from, err := parseInstant(name+".from", r.From)
		if err != nil {
			return out, err
		}
		to, err := parseInstant(name+".to", r.To)
		if err != nil {
			return out, err
		}
		out.Ranges = append(out.Ranges, schedule.Range{From: from, To: to})
	}
	return out, nil
}

func compactPayload(p json.RawMessage, lim Limits) ([]byte, error) {
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil, nil
	}
	if len(p) > lim.MaxPayload {
		return nil, errorf(CodePayloadTooLarge, "payload", "payload is %d bytes, the limit is %d", len(p), lim.MaxPayload)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, p); err != nil {
		return nil, errorf(CodeInvalidField, "payload", "not valid JSON: %v", err)
	}
	// JSON text is UTF-8 (RFC 8259, section 8.1), but encoding/json lets
	// invalid bytes through inside strings: they would reach every
	// consumer, whose parsers may refuse the whole event.
	if !utf8.Valid(buf.Bytes()) {
		return nil, errorf(CodeInvalidField, "payload", "not valid JSON: a string holds bytes that are not UTF-8")
	}
	return buf.Bytes(), nil
}

// Def turns a Job back into its JSON definition (times in RFC 3339, UTC).
func (j Job) Def() JobDef {
	d := JobDef{Cron: j.Spec.Cron, TZ: j.Spec.TZ, Bucket: j.Bucket, MisfirePolicy: j.MisfirePolicy,
		MisfireGrace: j.MisfireGrace.String(), Payload: j.Payload}
	if j.Spec.Every > 0 {
		d.Every = j.Spec.Every.String()
	}
	d.At, d.Start, d.End = formatTime(j.Spec.At), formatTime(j.Spec.Start), formatTime(j.Spec.End)
	if !j.Spec.DST.IsZero() {
		d.DST = &DSTDef{Gap: j.Spec.DST.Gap, Overlap: j.Spec.DST.Overlap}
	}
	if x := j.Spec.Exclude; len(j.Spec.Also) > 0 || (!x.IsZero() && x.TZ != j.Spec.TZ) {
		d.Schedules = append([]ScheduleDef{{Cron: d.Cron, Every: d.Every, At: d.At, TZ: d.TZ, DST: d.DST}}, scheduleDefs(j.Spec.Also)...)
		d.Cron, d.Every, d.At, d.TZ, d.DST = "", "", "", j.Spec.Exclude.TZ, nil
	}
	if x := j.Spec.Exclude; len(x.Dates) > 0 || len(x.Ranges) > 0 || len(x.Calendars) > 0 {
		d.TZ = x.TZ
		d.Exclude = excludeDef(x)
	}
	if j.Jitter > 0 {
		d.Jitter = j.Jitter.String()
	}
	d.MaxFires = j.MaxFires
	return d
}

func scheduleDefs(ms []schedule.Spec) []ScheduleDef {
	out := make([]ScheduleDef, 0, len(ms))
	for _, m := range ms {
		sd := ScheduleDef{Cron: m.Cron, At: formatTime(m.At), TZ: m.TZ}
		if m.Every > 0 {
			sd.Every = m.Every.String()
		}
		if !m.DST.IsZero() {
			sd.DST = &DSTDef{Gap: m.DST.Gap, Overlap: m.DST.Overlap}
		}
		out = append(out, sd)
	}
	return out
}

func excludeDef(x schedule.Exclusions) *ExcludeDef {
	d := &ExcludeDef{}
	for _, day := range x.Dates {
		d.Dates = append(d.Dates, day.String())
	}
	for _, r := range x.Ranges {
		d.Ranges = append(d.Ranges, RangeDef{From: formatTime(r.From), To: formatTime(r.To)})
	}
	d.Calendars = slices.Clone(x.Calendars)
	return d
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// DecodeJobDef parses a job definition as sent alone (the body of
// PUT /v1/jobs/{id}) with the wire format's strict rules: exact field
// names, no unknown fields, no key twice, one JSON value. It does not
// validate the definition (see JobDef.Validate).
func DecodeJobDef(b []byte) (JobDef, error) {
	var d JobDef
	if err := strictUnmarshal(b, &d, jobDefShape); err != nil {
		return JobDef{}, err
	}
	d.normalizeLists()
	return d, nil
}

// normalizeLists makes empty lists nil ([] and null both mean "none"),
// so that a definition and its JSON encoding decode alike.
func (d *JobDef) normalizeLists() {
	if len(d.Schedules) == 0 {
		d.Schedules = nil
	}
	if x := d.Exclude; x != nil {
		if len(x.Dates) == 0 {
			x.Dates = nil
		}
		if len(x.Ranges) == 0 {
			x.Ranges = nil
		}
		if len(x.Calendars) == 0 {
			x.Calendars = nil
		}
	}
}
