package history

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/chronos-scheduler/chronos/codecs"
)

// decodeCommand decodes a chronos-jobs record keyed key as
// codecs.DecodeCommand does, with the same result and the same validation
// (codecs.CommandMsg.Command), but reads the common form cheaply: a record
// as codecs.EncodeCommand writes it (the API, the CLI and the bench do) is
// read front to back by commandHead instead of by the strict decoder, whose
// two passes were most of the history group's cost per put (17 µs of
// 18 µs; the fold is the rest). Anything else goes to the strict decoder.
func decodeCommand(key, raw []byte, lim codecs.Limits) (codecs.Command, error) {
	if m, ok := commandHead(raw); ok {
		return m.Command(key, lim)
	}
	return codecs.DecodeCommand(key, raw, lim)
}

// commandHead reads a command record in the form codecs.EncodeCommand
// writes: the fields of codecs.CommandMsg (and of its job and dst) in their
// order, each at most once, no whitespace, strings without escapes. ok is
// false for anything else, and for what this reader does not want to judge
// alone: a payload that is null or holds an object (the strict decoder
// rejects duplicate keys at any depth inside a payload). What it accepts,
// codecs.DecodeCommand accepts too and decodes to the same message: the
// strict decoder's rules (known fields only, exact case, no duplicates, one
// value) hold by construction.
func commandHead(b []byte) (m codecs.CommandMsg, ok bool) {
	p := &scan{b: b}
	if !p.lit(`{"v":`) {
		return m, false
	}
	v, ok := p.int()
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return m, false
	}
	m.V = int(v)
	if !p.lit(`,"op":`) || !p.str(&m.Op) {
		return m, false
	}
	if p.lit(`,"id":`) && !p.str(&m.ID) {
		return m, false
	}
	if p.lit(`,"job":`) {
		var j codecs.JobDef
		if !p.job(&j) {
			return m, false
		}
		m.Job = &j
	}
	if p.lit(`,"trigger_id":`) && !p.str(&m.TriggerID) {
		return m, false
	}
	if p.lit(`,"payload":`) && !p.payload(&m.Payload) {
		return m, false
	}
	if p.lit(`,"if_version":`) {
		n, ok := p.uint()
		if !ok {
			return m, false
		}
		m.IfVersion = &n
	}
	if (p.lit(`,"note":`) && !p.str(&m.Note)) || (p.lit(`,"from":`) && !p.str(&m.From)) || (p.lit(`,"to":`) && !p.str(&m.To)) {
		return m, false
	}
	return m, p.lit(`}`) && len(p.b) == 0
}

// job reads a job definition (codecs.JobDef) in its field order.
func (p *scan) job(j *codecs.JobDef) bool {
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
		var d codecs.DSTDef
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

// payload consumes one JSON value that is not null and holds no object,
// and copies it (a json.RawMessage keeps the bytes as written).
func (p *scan) payload(dst *json.RawMessage) bool {
	n, ok := valueEnd(p.b)
	if !ok || bytes.IndexByte([]byte(`"[-0123456789tf`), p.b[0]) < 0 {
		return false // null, or whitespace first
	}
	v := p.b[:n]
	if c := v[len(v)-1]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	if bytes.IndexByte(v, '{') >= 0 && !isString(v) {
		// An object somewhere inside (or a '{' in one of an array's
		// strings: the strict decoder decides either way).
		return false
	}
	if !json.Valid(v) {
		return false
	}
	*dst = append(json.RawMessage(nil), v...)
	p.b = p.b[n:]
	return true
}

// isString reports whether v is one JSON string (and nothing else).
func isString(v []byte) bool {
	n, ok := stringEnd(v)
	return ok && n == len(v)
}

// valueEnd returns the length of the JSON value b starts with, found by
// its brackets and strings only (the caller checks it with json.Valid).
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
			depth++
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
