package views

import (
	"fmt"

	"github.com/chronos-scheduler/chronos/codecs"
)

// BulkStatus is a bulk operation as the shards' table entries report it.
type BulkStatus struct {
	TriggerID string `json:"trigger_id"`
	Op        string `json:"op"`
	Bucket    string `json:"bucket,omitempty"`
	Prefix    string `json:"prefix,omitempty"`
	// Shards is the number of shards; Finished how many have walked all
	// their jobs and applied the commands; Queued how many hold it queued
	// or in progress. The rest
	// have not received it yet, or have forgotten it (a shard remembers
	// its last codecs.BulkResultsKept operations).
	Shards   int `json:"shards"`
	Finished int `json:"finished"`
	Queued   int `json:"queued"`
	// Done is true once every shard has finished it: Matched and Changed
	// are then the totals.
	Done bool `json:"done"`
	// Matched is the sum over the finished shards of their jobs the
	// operation selected (not deleted); Changed of the commands they wrote
	// (one per job the operation changes).
	Matched int64 `json:"matched"`
	Changed int64 `json:"changed"`
	// Skipped is how many of those commands lost to a newer version of
	// their job (a put, pause, resume or delete applied between the walk
	// and the command) and changed nothing.
	Skipped int64 `json:"skipped"`
}

// Bulk returns the status of bulk operation id from every shard's entry
// (ErrNotFound when no shard knows it). Safe for concurrent use.
func (j *Jobs) Bulk(id string) (BulkStatus, error) {
	st := BulkStatus{TriggerID: id, Shards: len(j.shardKeys)}
	for _, k := range j.shardKeys {
		v, err := j.view.Get(k)
		if err != nil {
			return BulkStatus{}, fmt.Errorf("views: %w", err)
		}
		b, _ := v.([]byte)
		rec, err := codecs.DecodeShardRecord(b)
		if err != nil {
			return BulkStatus{}, fmt.Errorf("views: shard %s: %w", k, err)
		}
		addBulk(&st, rec.Bulk)
	}
	if st.Finished == 0 && st.Queued == 0 {
		return BulkStatus{}, ErrNotFound
	}
	st.Done = st.Finished == st.Shards
	return st, nil
}

// addBulk adds one shard's part of operation st.TriggerID to st.
func addBulk(st *BulkStatus, b codecs.BulkState) {
	if r, ok := b.Finished(st.TriggerID); ok {
		st.Finished++
		st.Matched += r.Matched
		st.Changed += r.Changed
		st.Skipped += r.Skipped
		st.Op, st.Bucket, st.Prefix = r.Op, r.Bucket, r.Prefix
		return
	}
	for _, q := range b.Queue {
		if q.TriggerID == st.TriggerID {
			st.Queued++
			st.Op, st.Bucket, st.Prefix = q.Op, q.Bucket, q.Prefix
			return
		}
	}
}
