package codecs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chronos-scheduler/chronos/topology"
)

// Bulk operations: a chronos-bucket-triggers record with an op other than
// fire pauses, resumes or deletes every job of a bucket, or every job whose
// id starts with a prefix. The router sends it to every shard like a bucket
// trigger; each shard writes one ordinary command (pause, resume, delete)
// to chronos-jobs for each of its jobs that the op changes (see
// docs/schedules.md "Bulk operations").
const (
	// BulkFire is a bucket trigger's default op: fire the bucket's jobs
	// once. A decoded fire has Op "" (sent as "fire" or without op).
	BulkFire = "fire"
	// BulkPause, BulkResume and BulkDelete are the bulk operations.
	BulkPause  = OpPause
	BulkResume = OpResume
	BulkDelete = OpDelete
)

// BulkKey is the record key the HTTP API and the CLI give every bulk
// operation on chronos-bucket-triggers: one key, so one partition, so the
// router hands the operations to the shards in the order they were
// written (records with different keys land on different partitions,
// which Kafka does not order). Direct producers that need two operations
// applied in order write them with one key, this one or their own.
const BulkKey = "bulk"

// BulkHeader is the record header of the commands a bulk operation
// writes: "<MAC> <trigger id>", the MAC (32 hex digits) keyed by the
// operation's secret over its trigger id, the job id and the version the
// walk saw. A command so marked that loses to a newer version of its job
// (if_version) is counted in the operation's skipped count instead of
// being rejected; with any other value it is an ordinary command.
const BulkHeader = "chronos-bulk"

// BulkMAC is the MAC of a bulk command (BulkHeader): HMAC-SHA256 keyed by
// the operation's nonce over its trigger id, the job id and the version
// the walk saw, 128 bits in hex. Only the shard that holds the nonce can
// make it, and it does not reveal the nonce.
func BulkMAC(nonce, triggerID, key string, version uint64) string {
	m := hmac.New(sha256.New, []byte(nonce))
	m.Write([]byte(triggerID))
	m.Write([]byte{0})
	m.Write([]byte(key))
	m.Write([]byte{0})
	m.Write(strconv.AppendUint(nil, version, 10))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// IsBulkOp reports whether op is one of the bulk operations (pause,
// resume, delete).
func IsBulkOp(op string) bool { return op == BulkPause || op == BulkResume || op == BulkDelete }

// ValidatePrefix checks a bulk operation's job-id prefix: 1..MaxIDLen bytes
// of valid UTF-8 made of the characters a job id may hold, not starting
// with the reserved prefix of Chronos's own keys (topology.ShardKeyPrefix,
// "__chronos/"), which no job id may start with: such a prefix could
// select only internal keys, so it is refused (reserved_id) at every
// entrance. A shorter prefix of it ("__chronos") is a prefix like any
// other: it selects the jobs whose ids start with it, never an internal
// key. Unlike an id it may end with a space and need not be in NFC (it is
// compared byte for byte with the ids it selects).
func ValidatePrefix(p string) error {
	switch {
	case strings.HasPrefix(p, topology.ShardKeyPrefix):
		return errorf(CodeReservedID, "prefix", "prefix starts with the reserved prefix %q, which no job id may start with", topology.ShardKeyPrefix)
	case p == "":
		return errorf(CodeInvalidField, "prefix", "empty prefix: a bulk operation selects a bucket or a non-empty id prefix")
	case len(p) > MaxIDLen:
		return errorf(CodeInvalidField, "prefix", "prefix is %d bytes, the limit is %d", len(p), MaxIDLen)
	case !utf8.ValidString(p):
		return errorf(CodeInvalidField, "prefix", "prefix is not valid UTF-8")
	}
	for _, r := range p {
		if reason := badRune(r); reason != "" {
			return errorf(CodeInvalidField, "prefix", "prefix contains %s %U", reason, r)
		}
	}
	return nil
}

// checkBulk checks the fields of a bucket trigger record that depend on its
// op: a fire names a bucket and may carry a payload; a bulk operation names
// a bucket, a prefix, or both (the bucket's jobs with the prefix) and no
// payload; only a pause takes a note.
func checkBulk(b *BucketTrigger) error {
	if b.Op == BulkFire {
		b.Op = "" // a fire is decoded as before bulk operations existed
	}
	if b.Op != "" && !IsBulkOp(b.Op) {
		return errorf(CodeUnknownOp, "op", "unknown op %q; want fire (the default), pause, resume or delete", b.Op)
	}
	if b.Note != "" && b.Op != BulkPause {
		return errorf(CodeUnknownField, "note", "only pause takes a note")
	}
	if len(b.Note) > MaxNoteBytes || !utf8.ValidString(b.Note) {
		return errorf(CodeInvalidField, "note", "a note is at most %d bytes of UTF-8, got %d bytes", MaxNoteBytes, len(b.Note))
	}
	if b.Op == "" {
		if b.Prefix != "" {
			return errorf(CodeUnknownField, "prefix", "a bucket fire takes a bucket, not a prefix")
		}
		if b.Bucket == "" {
			return errorf(CodeInvalidField, "bucket", "a bucket trigger needs a bucket")
		}
		return validateBucket(b.Bucket)
	}
	if len(b.Payload) > 0 {
		return errorf(CodeUnknownField, "payload", "only fire takes a payload")
	}
	if b.Bucket == "" && b.Prefix == "" {
		return errorf(CodeInvalidField, "bucket", "a bulk %s needs a bucket, a prefix, or both", b.Op)
	}
	if b.Prefix != "" {
		if err := ValidatePrefix(b.Prefix); err != nil {
			return err
		}
	}
	return validateBucket(b.Bucket)
}

// BulkBody is the optional body of the bulk routes of the HTTP API
// (POST /v1/buckets/{bucket}/{op}, POST /v1/prefixes/{prefix}/{op}).
type BulkBody struct {
	// TriggerID names the operation (default: a new random one).
	TriggerID string `json:"trigger_id,omitempty"`
	// Note says why the jobs are paused (pause only).
	Note string `json:"note,omitempty"`
}

// DecodeBulkBody parses a BulkBody with the wire format's strict rules. It
// does not validate the values (the record built from it is decoded again
// before it is produced).
func DecodeBulkBody(b []byte) (BulkBody, error) {
	var p BulkBody
	if err := strictUnmarshal(b, &p, bulkBodyShape); err != nil {
		return BulkBody{}, err
	}
	return p, nil
}

// BulkTarget describes what a bulk operation selects, for messages:
// `bucket "b"`, `prefix "p"` or `bucket "b", prefix "p"`.
func BulkTarget(bucket, prefix string) string {
	switch {
	case bucket == "":
		return fmt.Sprintf("prefix %q", prefix)
	case prefix == "":
		return fmt.Sprintf("bucket %q", bucket)
	}
	return fmt.Sprintf("bucket %q, prefix %q", bucket, prefix)
}

// CheckBucketTrigger checks the op-dependent fields of a bucket trigger as
// DecodeBucketTrigger does (op, bucket or prefix, note, payload presence),
// for one that arrives by another way (the scheduler's shard triggers,
// whose trigger id may be a derived one).
func CheckBucketTrigger(b BucketTrigger) error { return checkBulk(&b) }

// Bounds of a shard's bulk state (ShardRecord.Bulk).
const (
	// MaxBulkQueued is the most bulk operations a shard holds, the one in
	// progress included; a shard refuses more (rejects the trigger).
	MaxBulkQueued = 16
	// BulkResultsKept is how many finished bulk operations a shard
	// remembers, with their counts.
	BulkResultsKept = 32
)

// BulkState is a shard's bulk operations: Queue[0] is in progress (its
// cursor and counts travel in its continuations), the rest wait in the
// order they arrived; Done are the last finished ones, oldest first.
type BulkState struct {
	Queue []ShardTrigger `json:"queue,omitempty"`
	Done  []BulkResult   `json:"done,omitempty"`
}

// BulkResult is one finished bulk operation on one shard.
type BulkResult struct {
	TriggerID string    `json:"trigger_id"`
	Op        string    `json:"op"`
	Bucket    string    `json:"bucket,omitempty"`
	Prefix    string    `json:"prefix,omitempty"`
	T         time.Time `json:"t"` // the operation's record time
	// Matched is how many of the shard's jobs the operation selected (not
	// deleted); Changed how many it wrote a command to (the jobs it
	// changes, as the shard saw them when it reached them).
	Matched int64 `json:"matched"`
	Changed int64 `json:"changed"`
	// Skipped is how many of those commands lost to a newer version of
	// their job (a put between the walk and the command: the command
	// carries the version the walk saw, if_version) and changed nothing.
	Skipped int64 `json:"skipped,omitempty"`
}

// IsZero reports whether s holds nothing.
func (s BulkState) IsZero() bool { return len(s.Queue) == 0 && len(s.Done) == 0 }

// Queued reports whether an operation with trigger id id is queued (or in
// progress).
func (s BulkState) Queued(id string) bool {
	for _, q := range s.Queue {
		if q.TriggerID == id {
			return true
		}
	}
	return false
}

// Finished returns the result of the finished operation id, if the shard
// still remembers it.
func (s BulkState) Finished(id string) (BulkResult, bool) {
	for _, d := range s.Done {
		if d.TriggerID == id {
			return d, true
		}
	}
	return BulkResult{}, false
}

// Finish moves the operation in progress to Done with its counts (keeping
// the last BulkResultsKept) and returns the state with the next one, if
// any, in progress. It changes nothing it is given.
func (s BulkState) Finish(matched, changed, skipped int64) BulkState {
	if len(s.Queue) == 0 {
		return s
	}
	h := s.Queue[0]
	done := append(append([]BulkResult(nil), s.Done...), BulkResult{TriggerID: h.TriggerID, Op: h.Op,
		Bucket: h.Bucket, Prefix: h.Prefix, T: h.T, Matched: matched, Changed: changed, Skipped: skipped})
	if len(done) > BulkResultsKept {
		done = done[len(done)-BulkResultsKept:]
	}
	return BulkState{Queue: append([]ShardTrigger(nil), s.Queue[1:]...), Done: done}
}
