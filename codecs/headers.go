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

// MaxHeaderBytes is the most bytes of header keys and values a consumed
// record may carry (the patched decoder's sarama.MaxRecordHeaderBytes):
// a record whose callback's commit waits is held whole, and its headers
// count against the bound of such records (clients.MaxHeldBytes).
const MaxHeaderBytes = 16 << 10

// CodeTooManyHeaders: the record carries more than MaxHeaders headers, or
// more than MaxHeaderBytes of them (or a DroppedHeadersHeader of its own);
// nothing was applied.
const CodeTooManyHeaders = "too_many_headers"

// CheckHeaders returns a *Error with CodeTooManyHeaders when h, a consumed
// record's headers, carries DroppedHeadersHeader, and nil otherwise.
func CheckHeaders(h map[string][]byte) error {
	n, ok := h[DroppedHeadersHeader]
	if !ok {
		return nil
	}
	return &Error{Code: CodeTooManyHeaders, Field: "headers", Reason: fmt.Sprintf(
		"the record has more headers than a Chronos consumer decodes (at most %d, of at most %d bytes of keys and values together; %s: %q); nothing was applied",
		MaxHeaders, MaxHeaderBytes, DroppedHeadersHeader, Truncate(string(n), 20))}
}
