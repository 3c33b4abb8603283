package codecs

import (
	"fmt"
	"strconv"
	"time"
)

// Reject codes: stable, low-cardinality reasons used in chronos-rejects
// records and the chronos_rejects_total{reason} metric.
const (
	CodeMalformed       = "malformed"         // not valid JSON, wrong types, trailing data
	CodeUnknownVersion  = "unknown_version"   // "v" is not a supported version
	CodeUnknownOp       = "unknown_op"        // "op" is not put/delete/pause/resume/fire
	CodeUnknownField    = "unknown_field"     // a field this version does not define
	CodeInvalidID       = "invalid_id"        // empty, too long, control characters, key/id mismatch
	CodeReservedID      = "reserved_id"       // starts with the reserved shard-key prefix
	CodeInvalidSchedule = "invalid_schedule"  // cron/every/at/tz/start/end wrong
	CodeInvalidField    = "invalid_field"     // any other field wrong (bucket, misfire, payload)
	CodePayloadTooLarge = "payload_too_large" // payload over the configured limit
	CodeUnknownJob      = "unknown_job"       // pause/resume/fire of a job that does not exist
	CodeVersionConflict = "version_conflict"  // if_version does not match the job's version
)

// Error is a decoding or validation error. Safe to copy.
type Error struct {
	Code   string // one of the Code constants
	Field  string // the JSON field that is wrong, "" when not one field
	Reason string // a sentence for humans
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Reason)
}

func errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Reject codes of the input policy (see docs/topics.md).
const (
	CodeTombstone      = "tombstone"       // a null value on chronos-jobs (use op delete)
	CodeWrongPartition = "wrong_partition" // the key does not hash to the partition it arrived on
	// CodeInvalidTimestamp: the record's Kafka timestamp is not a time
	// Chronos can write (none, before year 1 or after 9999, see
	// CheckRecordTime).
	CodeInvalidTimestamp = "invalid_timestamp"
)

// RejectCodes returns every reject code (the Code constants above), the
// values of the reason label of chronos_rejects_total: the scheduler
// creates each series at 0 so that the first reject of a reason is an
// increase Prometheus sees. A new slice on each call.
func RejectCodes() []string {
	return []string{CodeMalformed, CodeTombstone, CodeUnknownVersion, CodeUnknownOp, CodeUnknownField,
		CodeInvalidID, CodeReservedID, CodeWrongPartition, CodeInvalidTimestamp, CodeInvalidSchedule,
		CodeInvalidField, CodePayloadTooLarge, CodeUnknownJob, CodeVersionConflict, CodeTooManyHeaders}
}

// Bounds of record timestamps (see CheckRecordTime).
var (
	minRecordTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxRecordTime = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// CheckRecordTime checks a record's Kafka timestamp before Chronos uses it
// as a time (a command's ts, a bucket trigger's scheduled_at): it must be
// set and between 1970-01-01 and 9999-12-31 UTC. Kafka's "no timestamp"
// (-1) and other negative ones reach consumers as the zero time, which
// Chronos reserves for "not set"; a year after 9999 cannot be written in
// RFC 3339 or JSON, so an event or read model carrying it could not be
// encoded or parsed. The error has code CodeInvalidTimestamp.
func CheckRecordTime(ts time.Time) error {
	if ts.Before(minRecordTime) || ts.After(maxRecordTime) {
		ms := "none"
		if !ts.IsZero() {
			ms = strconv.FormatInt(ts.UnixMilli(), 10)
		}
		return errorf(CodeInvalidTimestamp, "timestamp", "the record's timestamp (%s ms) is not a usable time: "+
			"a record needs a timestamp from 1970-01-01 to 9999-12-31 UTC (leave it to the producer client)", ms)
	}
	return nil
}
