package codecs

import (
	"encoding/json"
	"strconv"
)

// BucketTriggerVersion is the only bucket-trigger version this release reads.
const BucketTriggerVersion = 1

// BucketTrigger is a chronos-bucket-triggers record: fire every active job
// of a bucket once. Any key may be used (the bucket name is a good one).
type BucketTrigger struct {
	V      int    `json:"v"`
	Bucket string `json:"bucket"`
	// TriggerID names this trigger; each fire's id is "<job id>@<trigger id>",
	// so a re-delivered trigger dispatches the same ids. Empty: derived from
	// the record's partition and offset ("b-<partition>-<offset>").
	TriggerID string `json:"trigger_id,omitempty"`
	// Payload, when set, replaces every job's payload for this trigger.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// EncodeBucketTrigger marshals a bucket trigger; it sets V. Like
// EncodeCommand it writes the payload as given, without HTML escaping.
func EncodeBucketTrigger(b BucketTrigger) ([]byte, error) {
	b.V = BucketTriggerVersion
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
	if b.Bucket == "" {
		return BucketTrigger{}, errorf(CodeInvalidField, "bucket", "a bucket trigger needs a bucket")
	}
	if err := validateBucket(b.Bucket); err != nil {
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
