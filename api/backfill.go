package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// BackfillAccepted is the answer of POST /v1/jobs/{id}/backfill: the
// command was validated and written; the scheduler starts the backfill
// when it applies it (GET /v1/jobs/{id} then shows its progress).
type BackfillAccepted struct {
	Accepted
	// BackfillID names the backfill ("b-<partition>-<offset>" of its command).
	BackfillID string    `json:"backfill_id"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	// Total is the number of scheduled times in [from, to) as this
	// instance's view of the job has it (0 when it serves no view).
	Total int64 `json:"total"`
}

// backfill starts a backfill: the range is checked against the job's
// definition in the view (as the scheduler will check it) before the
// command is produced.
func (s *Server) backfill(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := s.readBody(w, r, false)
	if !ok {
		return
	}
	from, to, err := codecs.DecodeBackfillBody(body)
	if err != nil {
		writeError(w, err)
		return
	}
	m := codecs.CommandMsg{Op: codecs.OpBackfill, ID: id, From: from.Format(time.RFC3339Nano), To: to.Format(time.RFC3339Nano)}
	value, ok := s.encode(w, m)
	if !ok {
		return
	}
	var total int64
	if s.Jobs != nil {
		job, err := s.Jobs.Get(id)
		switch {
		case errors.Is(err, views.ErrNotFound):
			writeProblem(w, http.StatusNotFound, "not_found", "id", fmt.Sprintf("no job %q", id))
			return
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
			return
		}
		if job.Backfill != nil {
			writeProblem(w, http.StatusConflict, "backfill_in_progress", "id", fmt.Sprintf(
				"job %q has a backfill in progress (%s, %d of %d dispatched); cancel it first (DELETE /v1/jobs/{id}/backfill)",
				id, job.Backfill.ID, job.Backfill.Dispatched, job.Backfill.Total))
			return
		}
		def, err := job.Job.Validate(s.limits())
		countErr := false
		if err == nil {
			total, countErr, err = codecs.CheckBackfill(def.Spec, from, to, time.Now())
		}
		var ce *codecs.Error
		if countErr && errors.As(err, &ce) {
			// A well-formed past range, but the job's current schedule has
			// none of its times in it, or more than one backfill
			// dispatches: a conflict with the job's state (the same range
			// suits another schedule), not bad data.
			writeProblem(w, http.StatusConflict, ce.Code, ce.Field, ce.Reason)
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
	}
	a, ok := s.produceEncoded(w, r, m, value)
	if !ok {
		return
	}
	writeJSON(w, http.StatusAccepted, BackfillAccepted{Accepted: a, BackfillID: codecs.BackfillID(a.Partition, a.Offset), From: from, To: to, Total: total})
}

// cancelBackfill writes a cancel_backfill command (a job without a
// backfill in progress is left as it is).
func (s *Server) cancelBackfill(w http.ResponseWriter, r *http.Request) {
	s.send(w, r, codecs.CommandMsg{Op: codecs.OpCancelBackfill, ID: r.PathValue("id")})
}
