package codecs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// shape lists the exact field names of a JSON object and, for each, the
// shape of its value (nil: any JSON value, whose objects may have any keys
// but no key twice).
type shape map[string]shape

// elemShape is the key under which an array's shape gives its elements'.
const elemShape = "[]"

var (
	dstShape    = shape{"gap": nil, "overlap": nil}
	jobDefShape = shape{"cron": nil, "every": nil, "at": nil, "tz": nil, "start": nil, "end": nil,
		"payload": nil, "bucket": nil, "misfire_policy": nil, "misfire_grace": nil,
		"dst": dstShape, "jitter": nil, "max_fires": nil,
		"schedules": {elemShape: {"cron": nil, "every": nil, "at": nil, "tz": nil, "dst": dstShape}},
		"exclude":   {"dates": nil, "ranges": {elemShape: {"from": nil, "to": nil}}, "calendars": nil}}
	calendarShape = shape{"dates": nil, "description": nil}
	commandShape  = shape{"v": nil, "op": nil, "id": nil, "job": jobDefShape, "trigger_id": nil,
		"payload": nil, "if_version": nil, "note": nil, "from": nil, "to": nil}
	bucketTriggerShape = shape{"v": nil, "op": nil, "bucket": nil, "prefix": nil, "note": nil, "trigger_id": nil, "payload": nil}
	bulkBodyShape      = shape{"trigger_id": nil, "note": nil}
	triggerBodyShape   = shape{"trigger_id": nil, "payload": nil}
	pauseBodyShape     = shape{"note": nil}
)

// strictUnmarshal decodes exactly one JSON value into v and rejects what
// encoding/json lets through: unknown fields, field names that differ from
// the documented ones only in case ("Cron" for "cron"), and an object key
// given twice, at any depth (payloads included: consumers' JSON parsers
// disagree on which duplicate wins). sh describes v's fields.
func strictUnmarshal(data []byte, v any, sh shape) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		err = jsonError(err)
		var e *Error
		if errors.As(err, &e) && e.Code == CodeUnknownField {
			// encoding/json names the field without its path: inside an
			// array of objects (schedules[1].start) the shape walk names
			// it in full. Elsewhere the field's name alone stays, as
			// documented.
			var se *Error
			if serr := shapeOf(data, sh); errors.As(serr, &se) && strings.Contains(se.Field, "]") {
				return serr
			}
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(CodeMalformed, "", "trailing data after the JSON value")
	}
	return shapeOf(data, sh)
}

// shapeOf is checkShape's answer, from scanShape's one pass unless the
// document has a key only checkShape reads.
func shapeOf(data []byte, sh shape) error {
	if ok, err := scanShape(data, sh); ok {
		return err
	}
	return checkShape(data, sh)
}

// checkShape walks data (valid JSON, already decoded once) and reports the
// first field name that is not exact and the first duplicate key.
func checkShape(data []byte, sh shape) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walk(dec, sh, true, "")
}

// walk consumes one JSON value from dec. known says whether sh applies
// (false: any keys). path names the value for errors.
func walk(dec *json.Decoder, sh shape, known bool, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return errorf(CodeMalformed, path, "%v", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '[':
		elem := sh[elemShape]
		for i := 0; dec.More(); i++ {
			p := path
			if known && elem != nil {
				p += "[" + strconv.Itoa(i) + "]"
			}
			if err := walk(dec, elem, known && elem != nil, p); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return errorf(CodeMalformed, path, "%v", err)
			}
			k, _ := kt.(string)
			field := k
			if path != "" {
				field = path + "." + k
			}
			if seen[k] {
				return errorf(CodeMalformed, Truncate(field, 256), "key %q appears twice", Truncate(k, 256))
			}
			seen[k] = true
			var child shape
			childKnown := false
			if known {
				c, ok := sh[k]
				if !ok {
					for name := range sh {
						if strings.EqualFold(name, k) {
							return errorf(CodeUnknownField, Truncate(field, 256), "unknown field %q: field names are case-sensitive, this one is %q", Truncate(k, 256), name)
						}
					}
					return errorf(CodeUnknownField, Truncate(field, 256), "unknown field %q", Truncate(k, 256))
				}
				child, childKnown = c, c != nil
			}
			if err := walk(dec, child, childKnown, field); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errorf(CodeMalformed, path, "%v", err)
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return errorf(CodeMalformed, te.Field, "wrong type: %s cannot hold a JSON %s", te.Type, te.Value)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		field, _ := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		return errorf(CodeUnknownField, Truncate(field, 256), "%s", Truncate(strings.TrimPrefix(msg, "json: "), MaxRejectTextBytes))
	}
	if errors.Is(err, io.EOF) {
		return errorf(CodeMalformed, "", "empty value")
	}
	return errorf(CodeMalformed, "", "%v", err)
}
