package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code,omitempty"`
	Field  string `json:"field,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, code, field, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: http.StatusText(status), Status: status,
		Detail: detail, Code: code, Field: field})
}

// writeError answers a validation error with 400 (413 for size limits).
func writeError(w http.ResponseWriter, err error) {
	var ce *codecs.Error
	if errors.As(err, &ce) {
		status := http.StatusBadRequest
		if ce.Code == codecs.CodePayloadTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		writeProblem(w, status, ce.Code, ce.Field, ce.Reason)
		return
	}
	writeProblem(w, http.StatusBadRequest, codecs.CodeMalformed, "", err.Error())
}

// writeJSON answers v as JSON, or a 500 problem when v cannot be encoded
// (a job whose record holds a time after year 9999, which JSON cannot
// write): never a status with a truncated body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "unencodable", "", "the answer cannot be encoded as JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
