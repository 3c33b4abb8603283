package codecs

import "fmt"

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
)
