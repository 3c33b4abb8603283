package codecs

import (
	"encoding/json"
	"errors"
	"time"
)

// Reject is a record of chronos-rejects: an input that could not be applied,
// with the reason and the original bytes (key = the original key).
type Reject struct {
	V          int       `json:"v"`
	Code       string    `json:"code"`
	Field      string    `json:"field,omitempty"`
	Reason     string    `json:"reason"`
	Topic      string    `json:"topic"`
	Partition  int32     `json:"partition"`
	Offset     int64     `json:"offset"`
	Key        []byte    `json:"key"`   // base64 in JSON
	Value      []byte    `json:"value"` // base64 in JSON
	RejectedAt time.Time `json:"rejected_at"`
}

// RejectVersion is the version of reject records this release writes.
const RejectVersion = 1

// EncodeReject marshals a reject record; it sets V.
func EncodeReject(r Reject) []byte {
	r.V = RejectVersion
	b, err := json.Marshal(r)
	if err != nil { // cannot happen: every field marshals
		panic(err)
	}
	return b
}

// DecodeReject parses a reject record.
func DecodeReject(b []byte) (Reject, error) {
	var r Reject
	if err := json.Unmarshal(b, &r); err != nil {
		return Reject{}, jsonError(err)
	}
	return r, nil
}

// RejectOf builds the reject record of an input that failed with err: the
// code, field and reason of a *Error, or CodeMalformed and err's text.
func RejectOf(err error, topic string, partition int32, offset int64, key, value []byte, at time.Time) Reject {
	r := Reject{Code: CodeMalformed, Reason: err.Error(), Topic: topic, Partition: partition, Offset: offset,
		Key: key, Value: value, RejectedAt: at.UTC()}
	var ce *Error
	if errors.As(err, &ce) {
		r.Code, r.Field, r.Reason = ce.Code, ce.Field, ce.Reason
	}
	return r
}
