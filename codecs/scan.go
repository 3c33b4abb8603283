package codecs

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// scan reads a record's bytes front to back, in the one form this
// package writes it (commandHead, DispatchHead): what it does not expect
// makes its reader give way to the strict decoder.
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

// job reads a job definition (JobDef) in its field order.
func (p *scan) job(j *JobDef) bool {
	if !p.lit(`{`) {
		return false
	}
	first := true
	// field consumes the next field if it is name, with or without the
	// comma before it.
	field := func(name string) bool {
		sep := `,"`
		if first {
			sep = `"`
		}
		if p.lit(sep + name + `":`) {
			first = false
			return true
		}
		return false
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"cron", &j.Cron}, {"every", &j.Every}, {"at", &j.At}, {"tz", &j.TZ}, {"start", &j.Start}, {"end", &j.End}} {
		if field(f.name) && !p.str(f.dst) {
			return false
		}
	}
	if field("payload") && !p.payload(&j.Payload) {
		return false
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"bucket", &j.Bucket}, {"misfire_policy", &j.MisfirePolicy}, {"misfire_grace", &j.MisfireGrace}} {
		if field(f.name) && !p.str(f.dst) {
			return false
		}
	}
	if field("dst") {
		var d DSTDef
		if !p.lit(`{`) {
			return false
		}
		switch {
		case p.lit(`"gap":`):
			if !p.str(&d.Gap) || (p.lit(`,"overlap":`) && !p.str(&d.Overlap)) {
				return false
			}
		case p.lit(`"overlap":`):
			if !p.str(&d.Overlap) {
				return false
			}
		}
		if !p.lit(`}`) {
			return false
		}
		j.DST = &d
	}
	if field("jitter") && !p.str(&j.Jitter) {
		return false
	}
	if field("max_fires") {
		n, ok := p.int()
		if !ok || n < -1<<31 || n > 1<<31-1 {
			return false
		}
		j.MaxFires = int(n)
	}
	return p.lit(`}`)
}

// uint consumes a JSON integer that fits a uint64.
func (p *scan) uint() (uint64, bool) {
	n := 0
	for n < len(p.b) && p.b[n] >= '0' && p.b[n] <= '9' {
		n++
	}
	if n == 0 || (n < len(p.b) && (p.b[n] == '.' || p.b[n] == 'e' || p.b[n] == 'E')) || (n > 1 && p.b[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.b[:n]), 10, 64)
	if err != nil {
		return 0, false
	}
	p.b = p.b[n:]
	return v, true
}

// payload consumes one JSON value that is not null and whose objects, if
// any, pass the shape check here (freeFormPlain), and copies it (a
// json.RawMessage keeps the bytes as written).
func (p *scan) payload(dst *json.RawMessage) bool {
	n, ok := valueEnd(p.b)
	if !ok || bytes.IndexByte([]byte(`{"[-0123456789tf`), p.b[0]) < 0 {
		return false // null, or whitespace first
	}
	v := p.b[:n]
	if c := v[len(v)-1]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	if !json.Valid(v) {
		return false
	}
	if bytes.IndexByte(v, '{') >= 0 && !freeFormPlain(v) {
		// An object somewhere inside with a key given twice, or one the
		// shape check compares only unescaped: the strict decoder says
		// which error (the same key twice is one, whatever the depth).
		return false
	}
	*dst = append(json.RawMessage(nil), v...)
	p.b = p.b[n:]
	return true
}

// valueEnd returns the length of the JSON value b starts with, found by
// its brackets and strings only (the caller checks it with json.Valid).
//
// A value nested deeper than fastMaxDepth is not read here (false): the
// strict decoder's parser refuses a document nested past 10,000 levels,
// the record's own levels counted, so a payload that is valid alone may not
// be in its record (adversary round 68); the strict decoder decides.
func valueEnd(b []byte) (int, bool) {
	depth := 0
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '"':
			n, ok := stringEnd(b[i:])
			if !ok {
				return 0, false
			}
			i += n
			if depth == 0 {
				return i, true
			}
			continue
		case '[', '{':
			if depth++; depth > fastMaxDepth {
				return 0, false
			}
		case ']', '}':
			if depth == 0 {
				return i, i > 0
			}
			if depth--; depth == 0 {
				return i + 1, true
			}
		case ',':
			if depth == 0 {
				return i, i > 0
			}
		}
		i++
	}
	return len(b), depth == 0 && len(b) > 0
}

// fastMaxDepth is the deepest nesting valueEnd reads, far under
// encoding/json's 10,000 less a record's levels.
const fastMaxDepth = 1000

// stringEnd returns the length of the JSON string b starts with, escapes
// included.
func stringEnd(b []byte) (int, bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}
