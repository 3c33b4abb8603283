package api

import (
	"bytes"
	"net/http"

	"github.com/chronos-scheduler/chronos/codecs"
)

// pause answers POST /v1/jobs/{id}/pause: an optional body {"note": "..."}
// says why; the command's actor (ActorHeader) says who. Both show on
// GET /v1/jobs/{id} while the job is paused.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r, true)
	if !ok {
		return
	}
	var pb codecs.PauseBody
	if len(bytes.TrimSpace(body)) > 0 {
		var err error
		if pb, err = codecs.DecodePauseBody(body); err != nil {
			writeError(w, err)
			return
		}
	}
	s.send(w, r, codecs.CommandMsg{Op: codecs.OpPause, ID: r.PathValue("id"), Note: pb.Note})
}
