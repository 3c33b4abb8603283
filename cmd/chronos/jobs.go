package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/codecs"
)

// maxAnswer bounds an API answer the CLI reads: a page of 1000 jobs (ids up
// to 1 KiB) or a job with its payload fits many times over.
const maxAnswer = 16 << 20

// apiClient talks to the HTTP API of a running instance.
type apiClient struct {
	base      string
	token     string
	tokenFile string
}

func (a *apiClient) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&a.base, "api", "http://127.0.0.1:8080", "base URL of a Chronos instance's HTTP API")
	cmd.PersistentFlags().StringVar(&a.token, "api-token", "", "bearer token for the API; set CHRONOS_API_TOKEN instead (a flag shows in ps)")
	cmd.PersistentFlags().StringVar(&a.tokenFile, "api-token-file", "", "file holding the bearer token (trailing newline ignored; instead of --api-token)")
}

// secret returns the token to send: --api-token, or the contents of
// --api-token-file.
func (a *apiClient) secret() (string, error) {
	if a.tokenFile == "" {
		return a.token, nil
	}
	if a.token != "" {
		return "", &exitError{code: 1, err: errors.New("--api-token and --api-token-file: give one")}
	}
	b, err := os.ReadFile(a.tokenFile)
	if err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("api token file: %w", err)}
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// do sends a request and prints the JSON answer to out; a problem answer
// becomes an error with its detail and a non-zero exit.
func (a *apiClient) do(out io.Writer, method, path string, body []byte) error {
	answer, err := a.call(method, path, body)
	if err != nil {
		return err
	}
	_, _ = out.Write(answer)
	return nil
}

// call sends a request and returns the answer body of a success.
func (a *apiClient) call(method, path string, body []byte) ([]byte, error) {
	contentType := ""
	if body != nil || method == http.MethodPost || method == http.MethodPut {
		contentType = "application/json" // the API requires it on every write
	}
	status, answer, err := a.request(method, path, contentType, body, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if status >= 300 {
		return nil, problemAnswer(status, answer)
	}
	return answer, nil
}

// problemError is an API answer with a non-success status.
type problemError struct {
	status int
	err    error
}

func (e *problemError) Error() string { return e.err.Error() }
func (e *problemError) Unwrap() error { return e.err }

func newJobs() *cobra.Command {
	var api apiClient
	cmd := &cobra.Command{Use: "jobs", Short: "Manage jobs through the HTTP API of a running instance"}
	api.register(cmd)
	cmd.AddCommand(newJobsPut(&api))
	for _, op := range []struct{ name, method, suffix, short string }{
		{"delete", http.MethodDelete, "", "Delete a job"},
		{"pause", http.MethodPost, "/pause", "Pause a job (no fires until resumed)"},
		{"resume", http.MethodPost, "/resume", "Resume a paused job (fires missed while paused are not owed)"},
	} {
		var note string
		sub := &cobra.Command{
			Use: op.name + " ID", Short: op.short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := api.mustExist(args[0], op.name == "delete"); err != nil {
					return err
				}
				var body []byte
				if note != "" {
					body, _ = json.Marshal(codecs.PauseBody{Note: note})
				}
				return api.do(cmd.OutOrStdout(), op.method, "/v1/jobs/"+url.PathEscape(args[0])+op.suffix, body)
			},
		}
		if op.name == "pause" {
			sub.Flags().StringVar(&note, "note", "", "why the job is paused (shown by jobs get with who paused it)")
		}
		cmd.AddCommand(sub)
	}
	cmd.AddCommand(newJobsFire(&api), newJobsGet(&api), newJobsList(&api), newJobsImport(&api), newJobsFires(&api), newJobsHistory(&api), newJobsBackfill(&api))
	cmd.AddCommand(newJobsBulk(&api))
	return cmd
}

// checkIDArg validates a job id given on the command line with the rules
// every entrance applies (codecs.ValidateID); legacy allows ids that only
// earlier releases accepted (to read or delete such jobs), but never "",
// "." or "..", which no URL path can carry.
func checkIDArg(id string, legacy bool) error {
	err := codecs.ValidateID(id)
	if legacy && id != "" && id != "." && id != ".." {
		return nil
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("job id %s: %w", strconv.Quote(id), err)}
	}
	return nil
}

// mustExist checks id and that the instance's view has the job, so that
// pause, resume, fire and delete of a mistyped id fail here with a non-zero
// exit instead of being accepted and rejected later on chronos-rejects. An
// instance without a view (503) cannot tell: the command is sent as is.
func (a *apiClient) mustExist(id string, legacy bool) error {
	if err := checkIDArg(id, legacy); err != nil {
		return err
	}
	_, err := a.call(http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil)
	var (
		ee *exitError
		pe *problemError
	)
	if errors.As(err, &ee) {
		errors.As(ee.err, &pe)
	}
	switch {
	case err == nil:
		return nil
	case pe != nil && pe.status == http.StatusNotFound:
		return &exitError{code: 1, err: fmt.Errorf("no job %s", strconv.Quote(id))}
	case pe != nil && pe.status == http.StatusServiceUnavailable:
		return nil
	}
	return err
}

func newJobsPut(api *apiClient) *cobra.Command {
	var def codecs.JobDef
	var payload string
	var dst codecs.DSTDef
	var set scheduleFlags
	cmd := &cobra.Command{
		Use:   "put ID (--cron EXPR | --every DUR | --at TIME)...",
		Short: "Create or replace a job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if payload != "" {
				if !json.Valid([]byte(payload)) {
					return &exitError{code: 1, err: errors.New("--payload is not valid JSON")}
				}
				def.Payload = json.RawMessage(payload)
			}
			if err := set.apply(&def, dst); err != nil {
				return &exitError{code: 1, err: err}
			}
			if err := checkIDArg(args[0], false); err != nil {
				return err
			}
			body, err := json.Marshal(def)
			if err != nil {
				return err
			}
			return api.do(cmd.OutOrStdout(), http.MethodPut, "/v1/jobs/"+url.PathEscape(args[0]), body)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&set.crons, "cron", nil, "cron expression: 5 fields, 6 with seconds first, or @hourly/@daily/... (repeat for several schedules)")
	fs.StringArrayVar(&set.everys, "every", nil, "fixed interval (Go duration, at least 1s), aligned to the Unix epoch or --start (repeatable)")
	fs.StringArrayVar(&set.ats, "at", nil, "one-shot time, RFC 3339 (repeatable)")
	fs.StringVar(&set.schedules, "schedules", "", `several schedules as a JSON array, each {"cron"|"every"|"at", "tz", "dst"} (instead of --cron/--every/--at)`)
	fs.StringArrayVar(&set.dates, "exclude-date", nil, "a day (YYYY-MM-DD, in --tz) on which the job does not fire (repeatable)")
	fs.StringArrayVar(&set.ranges, "exclude-range", nil, "FROM/TO: RFC 3339 instants [FROM, TO) in which the job does not fire (repeatable)")
	fs.StringArrayVar(&set.calendars, "exclude-calendar", nil, "a named calendar (chronos calendars put) whose dates, in --tz, the job does not fire on (repeatable)")
	fs.StringVar(&def.TZ, "tz", "", "IANA time zone of the cron expressions and of --exclude-date (default UTC)")
	fs.StringVar(&def.Start, "start", "", "no fire before this RFC 3339 time")
	fs.StringVar(&def.End, "end", "", "no fire after this RFC 3339 time")
	fs.StringVar(&payload, "payload", "", "JSON payload copied into every dispatch event")
	fs.StringVar(&def.Bucket, "bucket", "", "named bucket the job belongs to")
	fs.StringVar(&def.MisfirePolicy, "misfire", "", "policy for fires later than the grace: skip, fire_once (default) or fire_all")
	fs.StringVar(&def.MisfireGrace, "misfire-grace", "", "fires later than this follow the misfire policy (default 60s)")
	fs.StringVar(&dst.Gap, "dst-gap", "", "cron only: a wall time skipped by a DST gap fires when the gap ends (shift, default) or not at all (skip)")
	fs.IntVar(&def.MaxFires, "max-fires", 0, "stop after this many scheduled times (1 to 100000; 0: no limit)")
	fs.StringVar(&def.Jitter, "jitter", "", "delay each fire by a deterministic offset in [0, jitter) from its fire_id (at most 1h and the schedule's gap)")
	fs.StringVar(&dst.Overlap, "dst-overlap", "", "cron only: a wall time repeated when clocks go back fires at its first (default), last or both occurrences")
	return cmd
}

// scheduleFlags are the flags of jobs put that give a job's schedules and
// exclusions.
type scheduleFlags struct {
	crons, everys, ats []string
	schedules          string
	dates, ranges      []string
	calendars          []string
}

// apply sets def's schedule: one flag gives the top-level cron, every or
// at; several (or --schedules) give schedules, the DST flags applying to
// each cron.
func (f *scheduleFlags) apply(def *codecs.JobDef, dst codecs.DSTDef) error {
	var dp *codecs.DSTDef
	if dst != (codecs.DSTDef{}) {
		dp = &dst
	}
	var ms []codecs.ScheduleDef
	for _, c := range f.crons {
		ms = append(ms, codecs.ScheduleDef{Cron: c, DST: dp})
	}
	for _, e := range f.everys {
		ms = append(ms, codecs.ScheduleDef{Every: e})
	}
	for _, a := range f.ats {
		ms = append(ms, codecs.ScheduleDef{At: a})
	}
	if dp != nil && len(f.crons) == 0 && len(ms) != 1 {
		// One --every or --at goes to the API as is, which refuses it too.
		return errors.New("--dst-gap and --dst-overlap apply to cron schedules only: give a --cron")
	}
	switch {
	case f.schedules != "":
		if len(ms) > 0 || dp != nil {
			return errors.New("give --schedules (with each member's dst in it) or --cron/--every/--at, not both")
		}
		// The API's strict rules: a misspelt member field is an error,
		// not a schedule in another zone.
		d, err := codecs.DecodeJobDef([]byte(`{"schedules":` + f.schedules + `}`))
		if err != nil {
			return fmt.Errorf("--schedules: %w", err)
		}
		def.Schedules = d.Schedules
	case len(ms) == 1:
		def.Cron, def.Every, def.At, def.DST = ms[0].Cron, ms[0].Every, ms[0].At, dp
	case len(ms) > 1:
		def.Schedules = ms
	default:
		def.DST = dp // no schedule: the API names what is missing
	}
	if len(f.dates) == 0 && len(f.ranges) == 0 && len(f.calendars) == 0 {
		return nil
	}
	def.Exclude = &codecs.ExcludeDef{Dates: f.dates, Calendars: f.calendars}
	for _, r := range f.ranges {
		from, to, ok := strings.Cut(r, "/")
		if !ok {
			return fmt.Errorf("--exclude-range %q: want FROM/TO", r)
		}
		def.Exclude.Ranges = append(def.Exclude.Ranges, codecs.RangeDef{From: from, To: to})
	}
	return nil
}

func newJobsFire(api *apiClient) *cobra.Command {
	var payload, trigger string
	cmd := &cobra.Command{
		Use:   "fire ID",
		Short: "Fire a job once now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := fireRequest(trigger, payload)
			if err != nil {
				return err
			}
			if err := api.mustExist(args[0], false); err != nil {
				return err
			}
			return api.do(cmd.OutOrStdout(), http.MethodPost, "/v1/jobs/"+url.PathEscape(args[0])+"/fire", b)
		},
	}
	cmd.Flags().StringVar(&payload, "payload", "", "JSON payload for this fire instead of the job's")
	cmd.Flags().StringVar(&trigger, "trigger-id", "", "idempotency key of this fire (default: random)")
	return cmd
}

// fireRequest is the body of a fire or bucket-trigger request.
func fireRequest(trigger, payload string) ([]byte, error) {
	body := map[string]any{}
	if trigger != "" {
		body["trigger_id"] = trigger
	}
	if payload != "" {
		if !json.Valid([]byte(payload)) {
			return nil, &exitError{code: 1, err: errors.New("--payload is not valid JSON")}
		}
		body["payload"] = json.RawMessage(payload)
	}
	return json.Marshal(body)
}
