package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	httpapi "github.com/chronos-scheduler/chronos/api"
)

// importChunk is a run of whole lines of the import file sent as one
// request; first is the file's line number of its first line.
type importChunk struct {
	first int
	body  []byte
}

func newJobsImport(api *apiClient) *cobra.Command {
	var dryRun bool
	var chunkBytes int
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Apply a file of commands (NDJSON, one per line, as on chronos-jobs; - for stdin) in bulk",
		Long: `Apply a file of commands in bulk through POST /v1/import: one JSON command per
line, exactly as written to chronos-jobs ({"v":1,"op":"put","id":"…","job":{…}};
also delete, pause, resume, fire). Every line is validated first, all of
them, across every request the file needs; if any line is invalid, each
problem is printed with its line number and nothing is written. Then the
lines are written in order. docs/api.md, "Import".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if chunkBytes < 1 || chunkBytes > httpapi.MaxImportBytes {
				return &exitError{code: 1, err: fmt.Errorf("--chunk-bytes %d: want 1..%d", chunkBytes, httpapi.MaxImportBytes)}
			}
			chunks, lines, err := readImport(args[0], chunkBytes, cmd.InOrStdin())
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return api.runImport(cmd.OutOrStdout(), cmd.ErrOrStderr(), chunks, lines, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate every line and write nothing")
	cmd.Flags().IntVar(&chunkBytes, "chunk-bytes", httpapi.MaxImportBytes, "largest request body; the file is cut at line boundaries")
	return cmd
}

// readImport reads the whole file (or stdin for "-") into chunks of at most
// max bytes of whole lines, and counts its non-blank lines.
func readImport(name string, max int, stdin io.Reader) ([]importChunk, int, error) {
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		in = f
	}
	r := bufio.NewReaderSize(in, 1<<16)
	var (
		chunks []importChunk
		cur    = importChunk{first: 1}
		lines  int
	)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if len(bytes.TrimSpace(line)) > 0 {
				lines++
			}
			if len(line) > max {
				return nil, 0, fmt.Errorf("line %d: %d bytes, over the %d bytes of one request", n, len(line), max)
			}
			if len(cur.body)+len(line) > max {
				chunks = append(chunks, cur)
				cur = importChunk{first: n}
			}
			if len(cur.body) == 0 {
				cur.first = n
			}
			cur.body = append(cur.body, line...)
			if line[len(line)-1] != '\n' {
				cur.body = append(cur.body, '\n')
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if len(cur.body) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks, lines, nil
}

// runImport validates every chunk (dry run), then, unless dryRun, writes
// them in order. It prints per-line problems to errOut and a summary
// (api.ImportResult for the whole file) to out.
func (a *apiClient) runImport(out, errOut io.Writer, chunks []importChunk, lines int, dryRun bool) error {
	total := httpapi.ImportResult{Lines: lines, DryRun: dryRun}
	report := func(c importChunk, res httpapi.ImportResult) {
		for _, e := range res.Errors {
			e.Line += c.first - 1
			id := ""
			if e.ID != "" {
				id = " " + strconv.Quote(e.ID)
			}
			field := ""
			if e.Field != "" {
				field = " " + e.Field
			}
			fmt.Fprintf(errOut, "line %d%s: %s%s: %s\n", e.Line, id, e.Code, field, e.Reason)
			if len(total.Errors) < httpapi.MaxImportErrors {
				total.Errors = append(total.Errors, e)
			}
		}
		total.ErrorCount += res.ErrorCount
		if more := res.ErrorCount - len(res.Errors); more > 0 {
			fmt.Fprintf(errOut, "... and %d more problems in lines %d and after\n", more, c.first)
		}
	}
	// One request validates all of its lines before writing any; a file
	// of several is validated whole first.
	if len(chunks) > 1 || dryRun {
		for _, c := range chunks {
			res, err := a.postImport(c.body, true)
			if err != nil {
				return err
			}
			report(c, res)
		}
	}
	if total.ErrorCount > 0 {
		writeSummary(out, total)
		return &exitError{code: 1, err: fmt.Errorf("%d of %d lines are invalid; nothing was written", total.ErrorCount, lines)}
	}
	if dryRun {
		writeSummary(out, total)
		return nil
	}
	for i, c := range chunks {
		res, err := a.postImport(c.body, false)
		if err != nil {
			writeSummary(out, total)
			return fmt.Errorf("%w; lines before %d were written, lines %d to %d may or may not have been, later ones were not: import from line %d again (a put applied twice leaves the same definition)",
				err, c.first, c.first, c.first+bytes.Count(c.body, []byte("\n"))-1, c.first)
		}
		total.Written += res.Written
		report(c, res)
		if res.ErrorCount > 0 && total.Written == 0 && len(chunks) == 1 && res.Written == 0 && isInvalid(res) {
			writeSummary(out, total)
			return &exitError{code: 1, err: fmt.Errorf("%d of %d lines are invalid; nothing was written", total.ErrorCount, lines)}
		}
		if res.ErrorCount > 0 {
			writeSummary(out, total)
			rest := ""
			if i+1 < len(chunks) {
				rest = fmt.Sprintf(", and lines from %d on were not sent", chunks[i+1].first)
			}
			return &exitError{code: 1, err: fmt.Errorf("%d lines were not written (listed above)%s; %d were written: import the rest again", res.ErrorCount, rest, total.Written)}
		}
	}
	writeSummary(out, total)
	return nil
}

// isInvalid reports whether res lists invalid lines (rather than lines the
// broker refused).
func isInvalid(res httpapi.ImportResult) bool {
	for _, e := range res.Errors {
		if e.Code == "kafka_unavailable" {
			return false
		}
	}
	return true
}

func writeSummary(out io.Writer, r httpapi.ImportResult) {
	b, _ := json.Marshal(r)
	fmt.Fprintf(out, "%s\n", b)
}

// postImport sends one chunk and returns its result; a busy instance is
// retried for up to a minute.
func (a *apiClient) postImport(body []byte, dryRun bool) (httpapi.ImportResult, error) {
	path := httpapi.ImportPath + "?dry_run=" + strconv.FormatBool(dryRun)
	deadline := time.Now().Add(time.Minute)
	for {
		status, answer, err := a.request(http.MethodPost, path, "application/x-ndjson", body, 5*time.Minute)
		if err != nil {
			return httpapi.ImportResult{}, err
		}
		if status == http.StatusTooManyRequests && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			continue
		}
		// 400 lists invalid lines, 503 lines the broker refused; other
		// failures are problems.
		var res httpapi.ImportResult
		listed := (status == http.StatusBadRequest || status == http.StatusServiceUnavailable) &&
			json.Unmarshal(answer, &res) == nil && res.ErrorCount > 0
		if listed {
			return res, nil
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(answer, &res); err != nil {
				return res, &exitError{code: 2, err: fmt.Errorf("the answer of %s is not an import result: %w", a.base, err)}
			}
			return res, nil
		}
		return res, problemAnswer(status, answer)
	}
}

// problemAnswer is the error of an answer with a non-success status.
func problemAnswer(status int, answer []byte) error {
	var p httpapi.Problem
	if json.Unmarshal(answer, &p) == nil && p.Detail != "" {
		msg := p.Detail
		if p.Field != "" {
			msg = p.Field + ": " + msg
		}
		return &exitError{code: 1, err: &problemError{status: status, err: fmt.Errorf("rejected (%d %s): %s", status, p.Code, msg)}}
	}
	return &exitError{code: 1, err: &problemError{status: status, err: fmt.Errorf("%d %s: %s", status, http.StatusText(status), bytes.TrimSpace(answer))}}
}

// request sends a request with contentType and returns the status and the
// answer body (at most maxAnswer bytes), whatever the status.
func (a *apiClient) request(method, path, contentType string, body []byte, timeout time.Duration) (int, []byte, error) {
	req, err := http.NewRequest(method, strings.TrimRight(a.base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	token, err := a.secret()
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, nil, &exitError{code: 2, err: fmt.Errorf("cannot reach the API at %s (is `chronos dev` running?): %w", a.base, err)}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(answer) > maxAnswer {
		err = fmt.Errorf("answer over %d bytes", maxAnswer)
	}
	if err != nil {
		return 0, nil, &exitError{code: 2, err: fmt.Errorf("reading the answer of %s: %w", a.base, err)}
	}
	return resp.StatusCode, answer, nil
}
