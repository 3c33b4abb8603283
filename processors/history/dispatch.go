package history

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/chronos-scheduler/chronos/codecs"
)

// dispatchHead reads the fields the history needs from a dispatch event
// as codecs.AppendDispatch writes it: the fields in their order, strings
// without escapes, then the payload, last, which it does not read (a
// dispatch event carries up to --max-payload bytes of payload, and
// decoding it whole was most of the history's cost per fire). ok is false
// for anything else (another field order, escapes, unknown fields, another
// version, bad syntax before the payload); the caller then decodes the
// record whole with codecs.DecodeDispatch, which decides. The payload is
// never examined: a record whose fields read correctly is folded even if
// its payload would not decode (the scheduler writes only valid ones).
func dispatchHead(b []byte) (d codecs.Dispatch, ok bool) {
	p := &scan{b: b}
	if !p.lit(`{"v":`) {
		return d, false
	}
	v, ok := p.int()
	if !ok || v != codecs.DispatchVersion {
		return d, false
	}
	d.V = int(v)
	if !p.lit(`,"fire_id":`) || !p.str(&d.FireID) || !p.lit(`,"job_id":`) || !p.str(&d.JobID) ||
		!p.lit(`,"trigger":`) || !p.str(&d.Trigger) ||
		!p.lit(`,"scheduled_at":`) || !p.time(&d.ScheduledAt) {
		return d, false
	}
	// A jittered fire's due time comes between (codecs.AppendDispatch).
	if p.lit(`,"due_at":`) && !p.time(&d.DueAt) {
		return d, false
	}
	if !p.lit(`,"fired_at":`) || !p.time(&d.FiredAt) || !p.lit(`,"missed":`) {
		return d, false
	}
	if d.Missed, ok = p.int(); !ok {
		return d, false
	}
	if p.lit(`,"bucket":`) && !p.str(&d.Bucket) {
		return d, false
	}
	if p.lit(`,"trigger_id":`) && !p.str(&d.TriggerID) {
		return d, false
	}
	switch {
	case p.lit(`}`):
		return d, len(p.b) == 0
	case p.lit(`,"payload":`):
		// The payload runs to the record's closing brace.
		return d, len(p.b) > 1 && p.b[len(p.b)-1] == '}'
	}
	return d, false
}

// scan reads a dispatch event's bytes front to back.
type scan struct{ b []byte }

// lit consumes s if the bytes start with it.
func (p *scan) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// int consumes a JSON integer (no fraction or exponent).
func (p *scan) int() (int64, bool) {
	n := 0
	if n < len(p.b) && p.b[n] == '-' {
		n++
	}
	for n < len(p.b) && p.b[n] >= '0' && p.b[n] <= '9' {
		n++
	}
	if n < len(p.b) && (p.b[n] == '.' || p.b[n] == 'e' || p.b[n] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(p.b[:n]), 10, 64)
	if err != nil || (n > 1 && p.b[0] == '0') || (n > 2 && p.b[0] == '-' && p.b[1] == '0') {
		return 0, false
	}
	p.b = p.b[n:]
	return v, true
}

// raw consumes a JSON string without escapes or control characters, in
// valid UTF-8, and returns its contents.
func (p *scan) raw() ([]byte, bool) {
	if len(p.b) == 0 || p.b[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			s := p.b[1:i]
			if !utf8.Valid(s) {
				return nil, false
			}
			p.b = p.b[i+1:]
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (p *scan) str(dst *string) bool {
	s, ok := p.raw()
	if ok {
		*dst = string(s)
	}
	return ok
}

// time consumes a JSON string holding an RFC 3339 time, parsed as
// encoding/json parses a time.Time.
func (p *scan) time(dst *time.Time) bool {
	rest := p.b
	s, ok := p.raw()
	if !ok {
		return false
	}
	return dst.UnmarshalJSON(rest[:len(s)+2]) == nil
}
