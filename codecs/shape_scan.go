package codecs

import (
	"bytes"
	"strconv"
	"strings"
)

// scanShape is checkShape without encoding/json's tokenizer: one pass over
// data's bytes, reporting the same first error as checkShape, that
// allocates once (the path it names errors by) for the objects of a command
// (at most shapeSmall keys each). It reads only what strictUnmarshal has
// already decoded (one valid JSON value): an object key that holds an
// escape or a byte beyond ASCII, which checkShape compares only once
// unescaped, sends the whole document to checkShape (ok false). The two
// are held equal by FuzzScanShape.
func scanShape(data []byte, sh shape) (ok bool, err error) {
	var segs [8]pathSeg
	s := shapeScanner{b: data, path: segs[:0]}
	err = s.value(sh, true)
	return !s.slow, err
}

// freeFormPlain reports whether v, one valid JSON value (a payload), passes
// the shape check as scanShape reads it: no object key twice at any depth,
// every key without an escape or a byte beyond ASCII. false also where
// scanShape would leave the answer to checkShape.
func freeFormPlain(v []byte) bool {
	var segs [8]pathSeg
	s := shapeScanner{b: v, path: segs[:0]}
	return s.value(nil, false) == nil && !s.slow
}

// shapeSmall is how many keys of one object scanShape compares pairwise for
// duplicates before it keeps them in a map.
const shapeSmall = 16

type shapeScanner struct {
	b    []byte
	i    int
	slow bool // a key checkShape must read: the answer is checkShape's
	// path names the value being read, as checkShape's path does, built
	// into a string only for an error: object keys, and the indexes of
	// the elements of arrays whose shape is known.
	path []pathSeg
}

type pathSeg struct {
	key []byte
	idx int // when key is nil
}

// field is the path as checkShape names it.
func (s *shapeScanner) field() string {
	var b strings.Builder
	for _, p := range s.path {
		if p.key == nil {
			b.WriteString("[" + strconv.Itoa(p.idx) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(p.key)
	}
	return b.String()
}

func (s *shapeScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// atEnd skips whitespace and reports whether the bytes ran out where a
// value or a key was due (not what strictUnmarshal hands it: checkShape
// answers).
func (s *shapeScanner) atEnd() bool {
	s.space()
	if s.i >= len(s.b) {
		s.slow = true
		return true
	}
	return false
}

// value skips one JSON value, checking objects against sh (known: sh
// applies).
func (s *shapeScanner) value(sh shape, known bool) error {
	if s.atEnd() {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		return s.object(sh, known)
	case '[':
		s.i++
		elem := sh[elemShape]
		for n := 0; ; n++ {
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if n > 0 {
				s.i++ // ','
			}
			indexed := known && elem != nil
			if indexed {
				s.path = append(s.path, pathSeg{idx: n})
			}
			if err := s.value(elem, indexed); err != nil || s.slow {
				return err
			}
			if indexed {
				s.path = s.path[:len(s.path)-1]
			}
		}
	case '"':
		_, _ = s.str()
		return nil
	default: // a number, true, false or null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			s.i++
		}
		return nil
	}
}

// str skips a string at s.i and returns its raw content; plain is false
// when it holds an escape or a byte beyond ASCII.
func (s *shapeScanner) str() (raw []byte, plain bool) {
	s.i++ // '"'
	start, plain := s.i, true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, plain
		case c == '\\':
			plain = false
			s.i += 2
			continue
		case c >= 0x80:
			plain = false
		}
		s.i++
	}
	s.slow = true
	return nil, false
}

func (s *shapeScanner) object(sh shape, known bool) error {
	s.i++ // '{'
	var small [shapeSmall][]byte
	var seen map[string]bool
	n := 0
	for {
		if s.atEnd() {
			return nil
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			return nil
		case ',':
			s.i++
			s.space()
		}
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			s.slow = true
			return nil
		}
		k, plain := s.str()
		if !plain || s.slow {
			s.slow = true
			return nil
		}
		s.path = append(s.path, pathSeg{key: k})
		// Duplicates: pairwise among the first keys, then a map.
		dup := false
		if n < shapeSmall {
			for _, p := range small[:n] {
				if bytes.Equal(p, k) {
					dup = true
					break
				}
			}
			small[n] = k
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*shapeSmall)
				for _, p := range small {
					seen[string(p)] = true
				}
			}
			dup = seen[string(k)]
			seen[string(k)] = true
		}
		n++
		if dup {
			return errorf(CodeMalformed, Truncate(s.field(), 256), "key %q appears twice", Truncate(string(k), 256))
		}
		var child shape
		childKnown := false
		if known {
			c, ok := sh[string(k)] // no allocation: the compiler reads the map with the bytes
			if !ok {
				ks := string(k)
				for name := range sh {
					if strings.EqualFold(name, ks) {
						return errorf(CodeUnknownField, Truncate(s.field(), 256), "unknown field %q: field names are case-sensitive, this one is %q", Truncate(ks, 256), name)
					}
				}
				return errorf(CodeUnknownField, Truncate(s.field(), 256), "unknown field %q", Truncate(ks, 256))
			}
			child, childKnown = c, c != nil
		}
		s.space()
		s.i++ // ':'
		if err := s.value(child, childKnown); err != nil || s.slow {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
}
