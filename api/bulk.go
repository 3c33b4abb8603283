package api

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// BulkReader reads the shards' counts of a bulk operation. The view of
// the job table implements it; a JobReader without it answers GET
// /v1/bulk/{trigger_id} with 503.
type BulkReader interface {
	Bulk(triggerID string) (views.BulkStatus, error)
}

// BulkAccepted is the answer of the bulk routes: the operation was
// validated and written to chronos-bucket-triggers; the shards apply it
// asynchronously and report their counts on Status (GET).
type BulkAccepted struct {
	Op        string `json:"op"`
	Bucket    string `json:"bucket,omitempty"`
	Prefix    string `json:"prefix,omitempty"`
	TriggerID string `json:"trigger_id"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Status is the path of the operation's counts.
	Status string `json:"status"`
}

// bulkRoutes are the bulk routes: POST /v1/buckets/{bucket}/{op} and
// POST /v1/prefixes/{prefix}/{op} for op pause, resume and delete.
func bulkRoutes() []route {
	var out []route
	for _, op := range []string{codecs.BulkPause, codecs.BulkResume, codecs.BulkDelete} {
		out = append(out,
			route{"POST /v1/buckets/{bucket}/" + op, v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.bulk(op, "bucket") })},
			route{"POST /v1/prefixes/{prefix}/" + op, v1(RoleWrite, func(s *Server) http.HandlerFunc { return s.bulk(op, "prefix") })})
	}
	return append(out, route{"GET /v1/bulk/{trigger_id}", v1(RoleRead, func(s *Server) http.HandlerFunc { return s.bulkStatus })})
}

// bulk answers a bulk route: an optional body {"trigger_id", "note"}. A
// token confined to a prefix acts on its own jobs only: on a bucket, the
// operation carries its prefix too (the bucket's jobs with it).
func (s *Server) bulk(op, by string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := s.readBody(w, r, true)
		if !ok {
			return
		}
		var bb codecs.BulkBody
		if len(bytes.TrimSpace(body)) > 0 {
			var err error
			if bb, err = codecs.DecodeBulkBody(body); err != nil {
				writeError(w, err)
				return
			}
		}
		// A confined token's operations are named under its prefix, so
		// that only it (and unconfined tokens) may read their counts.
		pr := principal(r)
		if bb.TriggerID == "" {
			bb.TriggerID = pr.Prefix + NewTriggerID()
		}
		if !pr.owns(bb.TriggerID) {
			writeProblem(w, http.StatusForbidden, "forbidden", "trigger_id",
				fmt.Sprintf("token %q is confined to trigger ids starting with %q", pr.Name, pr.Prefix))
			return
		}
		bt := codecs.BucketTrigger{Op: op, TriggerID: bb.TriggerID, Note: bb.Note}
		if by == "bucket" {
			bt.Bucket, bt.Prefix = r.PathValue("bucket"), pr.Prefix
		} else {
			bt.Prefix = r.PathValue("prefix")
		}
		value, ok := s.encodeBucketTrigger(w, bt)
		if !ok {
			return
		}
		// One key for every bulk operation: they apply in the order they
		// were acknowledged (codecs.BulkKey).
		rec := &kgo.Record{Topic: string(s.Names.BucketTriggers()), Key: []byte(codecs.BulkKey), Value: value, Headers: actor(r)}
		if !s.produceRecord(w, r, rec) {
			return
		}
		writeJSON(w, http.StatusAccepted, BulkAccepted{Op: op, Bucket: bt.Bucket, Prefix: bt.Prefix, TriggerID: bt.TriggerID,
			Partition: rec.Partition, Offset: rec.Offset, Status: "/v1/bulk/" + bt.TriggerID})
	}
}

// bulkStatus answers GET /v1/bulk/{trigger_id}: the shards' counts (a
// confined token only of trigger ids under its prefix, checked by api).
func (s *Server) bulkStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("trigger_id")
	br, ok := s.Jobs.(BulkReader)
	if !ok || s.Jobs == nil {
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", "this instance serves no view of the job table")
		return
	}
	st, err := br.Bulk(id)
	switch {
	case errors.Is(err, views.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "not_found", "trigger_id", fmt.Sprintf(
			"no shard knows bulk operation %q (not arrived yet, or older than the last %d a shard remembers)", id, codecs.BulkResultsKept))
		return
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}
