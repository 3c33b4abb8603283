package api

import (
	"net/http"
	"strconv"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// HistoryReader is the read side of job histories (implemented by
// *views.History): a job's fires and changes, newest first.
type HistoryReader interface {
	Get(id string) ([]views.Fire, []views.Change, error)
}

// FireList is the answer of GET /v1/jobs/{id}/fires.
type FireList struct {
	JobID string       `json:"job_id"`
	Fires []views.Fire `json:"fires"`
}

// ChangeList is the answer of GET /v1/jobs/{id}/history.
type ChangeList struct {
	JobID   string         `json:"job_id"`
	Changes []views.Change `json:"changes"`
}

// readHistory answers the shared failures of the history routes and
// returns the job's history; ok is false when it answered.
func (s *Server) readHistory(w http.ResponseWriter, r *http.Request) (string, []views.Fire, []views.Change, bool) {
	id := r.PathValue("id")
	legacy := codecs.IsLegacyID(id)
	if err := codecs.ValidateID(id); err != nil && !legacy {
		writeError(w, err)
		return "", nil, nil, false
	}
	for k := range r.URL.Query() {
		if k != "limit" {
			writeProblem(w, http.StatusBadRequest, codecs.CodeUnknownField, k, "unknown query parameter "+strconv.Quote(k)+"; use limit")
			return "", nil, nil, false
		}
	}
	// A bad request is one whatever the instance can serve: checked first.
	limit := -1
	if _, given := r.URL.Query()["limit"]; given {
		n, ok := intParam(r.URL.Query(), "limit", 0, 1, 1000)
		if !ok {
			writeProblem(w, http.StatusBadRequest, codecs.CodeInvalidField, "limit", "limit must be 1..1000")
			return "", nil, nil, false
		}
		limit = n
	}
	if s.History == nil {
		writeProblem(w, http.StatusServiceUnavailable, "history_unavailable", "", "this instance keeps no history (it runs with --no-history)")
		return "", nil, nil, false
	}
	fires, changes, err := s.History.Get(id)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "view_unavailable", "", err.Error())
		return "", nil, nil, false
	}
	if legacy && len(fires) == 0 && len(changes) == 0 {
		// An id of the earlier rules (a job stored before the name rules
		// keeps firing, docs/topics.md "Migration") is served its history;
		// one with none is unknown here, not an empty history: no valid
		// job can have it.
		writeProblem(w, http.StatusNotFound, "not_found", "id", "no history of job "+strconv.Quote(id))
		return "", nil, nil, false
	}
	if limit >= 0 {
		fires, changes = fires[:min(limit, len(fires))], changes[:min(limit, len(changes))]
	}
	return id, fires, changes, true
}

func (s *Server) jobFires(w http.ResponseWriter, r *http.Request) {
	if id, fires, _, ok := s.readHistory(w, r); ok {
		writeJSON(w, http.StatusOK, FireList{JobID: id, Fires: fires})
	}
}

func (s *Server) jobChanges(w http.ResponseWriter, r *http.Request) {
	if id, _, changes, ok := s.readHistory(w, r); ok {
		writeJSON(w, http.StatusOK, ChangeList{JobID: id, Changes: changes})
	}
}
