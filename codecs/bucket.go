package codecs

import (
	"encoding/json"
	"strconv"
)

// BucketTriggerVersion is the only bucket-trigger version this release reads.
const BucketTriggerVersion = 1

// BucketTrigger is a chronos-bucket-triggers record: fire every active job
// of a bucket once, or (Op pause, resume or delete) apply a bulk operation
// to every job of a bucket or of an id prefix. Any key may be used (the
// bucket name or the prefix is a good one).
type BucketTrigger struct {
	V int `json:"v"`
	// Op is fire (the default when absent; decoded as ""), pause, resume
	// or delete.
	Op     string `json:"op,omitempty"`
	Bucket string `json:"bucket,omitempty"`
	// Prefix selects the jobs whose id starts with it (bulk operations
	// only; with Bucket, the bucket's jobs with the prefix).
	Prefix string `json:"prefix,omitempty"`
	// Note says why the jobs are paused (pause only; at most MaxNoteBytes).
	Note string `json:"note,omitempty"`
	// TriggerID names this trigger; each fire's id is "<job id>@<trigger id>",
	// so a re-delivered trigger dispatches the same ids. A bulk operation's
	// trigger id names it in logs and in the shards' counts. Empty: derived from
	// the record's partition and offset ("b-<partition>-<offset>").
	TriggerID string `json:"trigger_id,omitempty"`
	// Payload, when set, replaces every job's payload for this trigger.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// EncodeBucketTrigger marshals a bucket trigger; it sets V and leaves out
// the default op (fire). Like
// EncodeCommand it writes the payload as given, without HTML escaping.
func EncodeBucketTrigger(b BucketTrigger) ([]byte, error) {
	b.V = BucketTriggerVersion
	if b.Op == BulkFire {
		b.Op = ""
	}
	return marshalUnescaped(b)
}

// DecodeBucketTrigger parses and validates a bucket trigger. partition and
// offset locate the record, for the derived trigger id.
func DecodeBucketTrigger(value []byte, partition int32, offset int64, lim Limits) (BucketTrigger, error) {
	var b BucketTrigger
	if err := strictUnmarshal(value, &b, bucketTriggerShape); err != nil {
		return BucketTrigger{}, err
	}
	if b.V != BucketTriggerVersion {
		return BucketTrigger{}, errorf(CodeUnknownVersion, "v", "version %d is not supported (this release reads v=%d)", b.V, BucketTriggerVersion)
	}
	if err := checkBulk(&b); err != nil {
		return BucketTrigger{}, err
	}
	if err := validateTriggerID(b.TriggerID); err != nil {
		return BucketTrigger{}, err
	}
	if b.TriggerID == "" {
		b.TriggerID = "b-" + strconv.Itoa(int(partition)) + "-" + strconv.FormatInt(offset, 10)
	}
	p, err := compactPayload(b.Payload, lim)
	if err != nil {
		return BucketTrigger{}, err
	}
	b.Payload = p
	return b, nil
}
