package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Bulk import limits (docs/api.md, "Import").
const (
	// MaxImportBytes is the largest body of POST /v1/import; the CLI cuts
	// bigger files into requests of at most this size at line boundaries.
	MaxImportBytes = 16 << 20
	// MaxImportErrors is how many invalid lines an answer lists.
	MaxImportErrors = 100
	// importTimeout bounds producing one import's records.
	importTimeout = 2 * time.Minute
)

// ImportPath is the route of the bulk import.
const ImportPath = "/v1/import"

// ImportLineError is one line of an import that was not applied.
type ImportLineError struct {
	// Line is the line number in the request body, from 1.
	Line  int    `json:"line"`
	ID    string `json:"id,omitempty"`
	Code  string `json:"code"`
	Field string `json:"field,omitempty"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
}

// ImportResult is the answer of POST /v1/import.
type ImportResult struct {
	// Lines is the number of commands in the body (blank lines not
	// counted).
	Lines int `json:"lines"`
	// Written is how many of them were written to chronos-jobs.
	Written int `json:"written"`
	// DryRun is set when nothing was meant to be written (?dry_run=true).
	DryRun bool `json:"dry_run,omitempty"`
	// Errors lists lines not written, at most MaxImportErrors of them;
	// ErrorCount counts them all.
	Errors     []ImportLineError `json:"errors,omitempty"`
	ErrorCount int               `json:"error_count,omitempty"`
}

// isNDJSON reports whether a Content-Type is application/x-ndjson.
func isNDJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/x-ndjson"
}

// importLine is one validated line of an import.
type importLine struct {
	n     int
	id    string
	value []byte
}

// importJobs is POST /v1/import: a body of commands as on chronos-jobs, one
// JSON object per line. Every line is validated as the scheduler will
// before anything is written; one invalid line and nothing is (400, every
// problem listed by line). Then all are written in order (commands on one
// job keep their order); lines the broker refused are listed (503), the
// others are written. With ?dry_run=true nothing is written. One import
// runs at a time per instance; another gets 429.
func (s *Server) importJobs(w http.ResponseWriter, r *http.Request) {
	dryRun := false
	for k, v := range r.URL.Query() {
		if k != "dry_run" || len(v) != 1 || (v[0] != "true" && v[0] != "false") {
			writeProblem(w, http.StatusBadRequest, codecs.CodeUnknownField, k, "the only query parameter is dry_run=true|false")
			return
		}
		dryRun = v[0] == "true"
	}
	select {
	case s.importSlot() <- struct{}{}:
		defer func() { <-s.importSlot() }()
	default:
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusTooManyRequests, "import_busy", "", "another import is running on this instance; retry when it is done")
		return
	}
	// An import may take longer than the server's read and write timeouts
	// (--http-read-timeout, --http-write-timeout), which suit one command.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(importTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(2 * importTimeout))
	body, err := readAll(http.MaxBytesReader(w, r.Body, MaxImportBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeProblem(w, http.StatusRequestEntityTooLarge, codecs.CodePayloadTooLarge, "",
			fmt.Sprintf("import body over %d bytes: send it in parts (chronos jobs import does)", MaxImportBytes))
		return
	case err != nil:
		writeProblem(w, http.StatusBadRequest, codecs.CodeMalformed, "", "reading body: "+err.Error())
		return
	}
	lines, res := s.validateImport(r, body)
	res.DryRun = dryRun
	if res.ErrorCount > 0 {
		writeImportProblem(w, http.StatusBadRequest, "invalid_import",
			fmt.Sprintf("%d of %d lines are invalid (listed in errors); nothing was written", res.ErrorCount, res.Lines), res)
		return
	}
	if dryRun || len(lines) == 0 {
		writeJSON(w, http.StatusOK, res)
		return
	}
	s.writeImport(r, lines, &res)
	if res.ErrorCount > 0 {
		writeImportProblem(w, http.StatusServiceUnavailable, "kafka_unavailable",
			fmt.Sprintf("%d of %d lines were not written (listed in errors); the others were", res.ErrorCount, res.Lines), res)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// ImportProblem is the problem document of an import with lines not
// written: the problem and the import's result as extension members.
type ImportProblem struct {
	Problem
	ImportResult
}

func writeImportProblem(w http.ResponseWriter, status int, code, detail string, res ImportResult) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ImportProblem{Problem: Problem{Type: "about:blank", Title: http.StatusText(status), Status: status,
		Detail: detail, Code: code}, ImportResult: res})
}

// importSlot returns the semaphore of imports (one at a time).
func (s *Server) importSlot() chan struct{} {
	s.importOnce.Do(func() { s.imports = make(chan struct{}, 1) })
	return s.imports
}

func readAll(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// validateImport splits body into lines and validates each as the
// scheduler will (codecs.DecodeCommand) and against the principal's
// prefix, on every core. What it keeps per line is small (the line's
// slice of body, its id, one bool): the problems of the first
// MaxImportErrors invalid lines are found again afterwards, so a body of a
// million invalid lines does not hold a million errors.
func (s *Server) validateImport(r *http.Request, body []byte) ([]importLine, ImportResult) {
	raw := make([]importLine, 0, bytes.Count(body, []byte{'\n'})+1)
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			raw = append(raw, importLine{n: n, value: line})
		}
	}
	bad := make([]bool, len(raw))
	p, lim := principal(r), s.limits()
	workers := min(runtime.GOMAXPROCS(0), 1+len(raw)/1000)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(raw); i += workers {
				id, err := validateImportLine(p, lim, raw[i])
				if err != nil {
					bad[i] = true
					continue
				}
				raw[i].id = id
			}
		}()
	}
	wg.Wait()
	res := ImportResult{Lines: len(raw)}
	lines := raw[:0] // in place: a line moves only to an index already read
	for i, l := range raw {
		if !bad[i] {
			lines = append(lines, l)
			continue
		}
		res.ErrorCount++
		if len(res.Errors) < MaxImportErrors {
			_, err := validateImportLine(p, lim, l)
			res.Errors = append(res.Errors, *err)
		}
	}
	return lines, res
}

// validateImportLine returns the id of one line, or why it cannot be
// written.
func validateImportLine(p Principal, lim codecs.Limits, l importLine) (string, *ImportLineError) {
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(l.value, &head); err != nil || head.ID == "" {
		reason := `each line is a command with its "id", as on chronos-jobs: {"v":1,"op":"put","id":"…","job":{…}}`
		if err != nil {
			reason = "not a JSON object: " + err.Error()
		}
		return "", &ImportLineError{Line: l.n, Code: codecs.CodeMalformed, Field: "id", Reason: reason}
	}
	c, err := codecs.DecodeCommand([]byte(head.ID), l.value, lim)
	if err != nil {
		e := &ImportLineError{Line: l.n, ID: head.ID, Code: codecs.CodeMalformed, Reason: err.Error()}
		var ce *codecs.Error
		if errors.As(err, &ce) {
			e.Code, e.Field, e.Reason = ce.Code, ce.Field, ce.Reason
		}
		return head.ID, e
	}
	if !p.owns(c.ID) {
		return c.ID, &ImportLineError{Line: l.n, ID: c.ID, Code: "forbidden", Field: "id",
			Reason: fmt.Sprintf("token %q is confined to ids starting with %s", p.Name, strconv.Quote(p.Prefix))}
	}
	if c.Op == codecs.OpPut && c.Job.Bucket != "" && !p.owns(c.Job.Bucket) {
		return c.ID, &ImportLineError{Line: l.n, ID: c.ID, Code: "forbidden", Field: "bucket",
			Reason: fmt.Sprintf("token %q is confined to buckets starting with %s", p.Name, strconv.Quote(p.Prefix))}
	}
	return c.ID, nil
}

// importChunk is how many records writeImport hands franz-go at a time.
const importChunk = 10000

// writeImport produces the validated lines in order and records in res
// what was written and which lines were not. Lines go out in chunks of
// importChunk, each acknowledged before the next (so commands on one job
// keep their order): only one chunk's records are held at a time.
func (s *Server) writeImport(r *http.Request, lines []importLine, res *ImportResult) {
	ctx, cancel := context.WithTimeout(r.Context(), importTimeout)
	defer cancel()
	headers := actor(r)
	for len(lines) > 0 {
		chunk := lines[:min(len(lines), importChunk)]
		lines = lines[len(chunk):]
		recs := make([]*kgo.Record, len(chunk))
		line := make(map[*kgo.Record]importLine, len(chunk))
		for i, l := range chunk {
			recs[i] = &kgo.Record{Topic: string(s.Names.Jobs()), Key: []byte(l.id), Value: l.value, Headers: headers}
			line[recs[i]] = l
		}
		// Results come in the order the broker acknowledged them; chunks
		// are in line order, so sorting each chunk's failures keeps the
		// first MaxImportErrors of the whole import.
		var failed []ImportLineError
		for _, pr := range s.Producer.ProduceSync(ctx, recs...) {
			if pr.Err != nil {
				l := line[pr.Record]
				failed = append(failed, ImportLineError{Line: l.n, ID: l.id, Code: "kafka_unavailable", Reason: "not written: " + pr.Err.Error()})
				continue
			}
			res.Written++
		}
		slices.SortFunc(failed, func(a, b ImportLineError) int { return a.Line - b.Line })
		res.ErrorCount += len(failed)
		res.Errors = append(res.Errors, failed[:min(len(failed), MaxImportErrors-len(res.Errors))]...)
	}
}
