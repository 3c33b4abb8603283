package codecs

import "fmt"

// DroppedHeadersHeader is the record header Chronos's Kafka consumers put on
// a record whose headers they cut (clients: the decoder keeps at most
// MaxHeaders of a record's headers): its value is the record's header
// count. A record carrying it is rejected (CheckHeaders), whoever set it.
const DroppedHeadersHeader = "chronos-dropped-headers"

// MaxHeaders is the most headers a consumed record may carry (the patched
// decoder's sarama.MaxRecordHeaders): each costs a few dozen bytes once
// decoded for 2 bytes on the wire, so a record of many empty headers would
// decode to many times its size. Chronos writes at most one.
const MaxHeaders = 64

// CodeTooManyHeaders: the record carries more than MaxHeaders headers (or a
// DroppedHeadersHeader of its own); nothing was applied.
const CodeTooManyHeaders = "too_many_headers"

// CheckHeaders returns a *Error with CodeTooManyHeaders when h, a consumed
// record's headers, carries DroppedHeadersHeader, and nil otherwise.
func CheckHeaders(h map[string][]byte) error {
	n, ok := h[DroppedHeadersHeader]
	if !ok {
		return nil
	}
	return &Error{Code: CodeTooManyHeaders, Field: "headers", Reason: fmt.Sprintf(
		"the record has more headers than the %d a Chronos consumer decodes (%s: %q); nothing was applied",
		MaxHeaders, DroppedHeadersHeader, Truncate(string(n), 20))}
}
