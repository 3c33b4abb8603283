package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf16"

	"github.com/spf13/cobra"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/views"
)

func newJobsGet(api *apiClient) *cobra.Command {
	var (
		output string
		next   int
		from   string
	)
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a job: definition, status, version, next fires (--next N, --from T), last fire",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkIDArg(args[0], false); err != nil {
				return err
			}
			answer, err := api.call(http.MethodGet, "/v1/jobs/"+url.PathEscape(args[0])+nextQuery(next, from), nil)
			if err != nil || output == "json" {
				if err == nil {
					_, _ = cmd.OutOrStdout().Write(answer)
				}
				return err
			}
			var j views.Job
			if err := json.Unmarshal(answer, &j); err != nil {
				return err
			}
			printJob(cmd.OutOrStdout(), &j)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().IntVar(&next, "next", 0, "show this many next fires (1 to 1000; default 5)")
	cmd.Flags().StringVar(&from, "from", "", "show the schedule's fires at or after this RFC 3339 time, in any job state (e.g. to check a DST change)")
	return cmd
}

// nextQuery is the query of GET /v1/jobs/{id} for --next and --from.
func nextQuery(next int, from string) string {
	q := url.Values{}
	if next != 0 {
		q.Set("next", strconv.Itoa(next))
	}
	if from != "" {
		q.Set("from", from)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func printJob(out io.Writer, j *views.Job) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s:\t%s\n", k, v)
		}
	}
	row("id", shown(j.ID))
	row("status", j.Status)
	row("version", fmt.Sprint(j.Version))
	row("cron", j.Job.Cron)
	row("every", j.Job.Every)
	row("at", j.Job.At)
	row("tz", shown(j.Job.TZ))
	if d := j.Job.DST; d != nil {
		gap, overlap := d.Gap, d.Overlap
		if gap == "" {
			gap = "shift"
		}
		if overlap == "" {
			overlap = "first"
		}
		row("dst", "gap "+gap+", overlap "+overlap)
	}
	for i, m := range j.Job.Schedules {
		row(fmt.Sprintf("schedule %d", i+1), scheduleLine(m))
	}
	if x := j.Job.Exclude; x != nil {
		row("exclude dates", strings.Join(x.Dates, ", "))
		row("exclude calendars", strings.Join(x.Calendars, ", "))
		for _, r := range x.Ranges {
			row("exclude range", r.From+" to "+r.To)
		}
	}
	row("start", j.Job.Start)
	row("end", j.Job.End)
	row("bucket", shown(j.Job.Bucket))
	row("misfire", j.Job.MisfirePolicy+" after "+j.Job.MisfireGrace)
	row("payload", shownJSON(j.Job.Payload))
	if j.Job.Jitter != "" {
		row("jitter", j.Job.Jitter)
	}
	if j.RemainingFires != nil {
		row("max fires", fmt.Sprintf("%d (%d remaining)", j.Job.MaxFires, *j.RemainingFires))
	}
	if p := j.Pause; p != nil {
		row("paused", p.At.Format(time.RFC3339)+" by "+shown(p.By)+": "+shown(p.Note))
	}
	if j.LastFire != nil {
		row("last fire", j.LastFire.ScheduledAt.Format(time.RFC3339)+"  ("+shown(j.LastFire.FireID)+")")
	}
	loc := time.UTC
	if j.Job.TZ != "" {
		if l, err := schedule.Location(j.Job.TZ); err == nil {
			loc = l
		}
	}
	for i, t := range j.NextFires {
		k := ""
		if i == 0 {
			k = "next fires"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", pad(k), t.UTC().Format(time.RFC3339), t.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	_ = w.Flush()
}

// shown is s as the CLI prints a name from the API: as it is when every
// character is printable (strconv.IsPrint), else Go-quoted, so control,
// bidi and zero-width characters (which ids stored by earlier releases may
// have) show as escapes instead of rearranging the terminal line.
func shown(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// shownJSON is the JSON document b as the CLI prints it: the same value,
// with every character in its strings that is not printable (bidi
// overrides, zero-width and control characters) written as a \u escape,
// and whitespace between its tokens as one space, so that a payload
// cannot rearrange or overwrite the terminal line. b is valid JSON (the
// API checked it when the job was put).
func shownJSON(b []byte) string {
	var out strings.Builder
	in, esc, space := false, false, false
	for _, r := range string(b) {
		switch {
		case in && esc:
			esc = false
		case in && r == '\\':
			esc = true
		case in && r == '"':
			in = false
		case in && !strconv.IsPrint(r):
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&out, "\\u%04x", u)
			}
			continue
		case in:
		case r == '"':
			in = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			space = true
			continue
		}
		if space {
			out.WriteByte(' ')
			space = false
		}
		out.WriteRune(r)
	}
	return out.String()
}

func pad(k string) string {
	if k == "" {
		return ""
	}
	return k + ":"
}

func newJobsList(api *apiClient) *cobra.Command {
	var (
		bucket, output string
		limit          int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, all or one bucket's, across all partitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Pages are printed as they arrive: a listing of millions of
			// jobs holds one page (at most 1000 rows) in memory, not all.
			p := newListPrinter(cmd.OutOrStdout(), output)
			cursor, n := "", 0
			for {
				q := url.Values{"limit": {"1000"}}
				if bucket != "" {
					q.Set("bucket", bucket)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				answer, err := api.call(http.MethodGet, "/v1/jobs?"+q.Encode(), nil)
				if err != nil {
					return err
				}
				var page httpapi.JobList
				if err := json.Unmarshal(answer, &page); err != nil {
					return err
				}
				if limit > 0 && n+len(page.Jobs) > limit {
					page.Jobs = page.Jobs[:limit-n]
				}
				if err := p.page(page.Jobs); err != nil {
					return err
				}
				n += len(page.Jobs)
				if cursor = page.NextCursor; cursor == "" || (limit > 0 && n >= limit) {
					break
				}
			}
			return p.end()
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "only this bucket's jobs")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many jobs (0: all)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

// listPrinter prints a job listing page by page: a table (with the header
// once, columns aligned within a page) or one JSON object {"jobs":[...]}.
type listPrinter struct {
	out   io.Writer
	json  bool
	first bool
}

func newListPrinter(out io.Writer, output string) *listPrinter {
	return &listPrinter{out: out, json: output == "json", first: true}
}

func (p *listPrinter) page(jobs []views.Summary) error {
	if p.json {
		for _, j := range jobs {
			b, err := json.Marshal(j)
			if err != nil {
				return err
			}
			sep := ","
			if p.first {
				sep, p.first = `{"jobs":[`, false
			}
			if _, err := io.WriteString(p.out, sep+string(b)); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	if p.first {
		fmt.Fprintln(w, "ID\tSTATUS\tVERSION\tBUCKET")
		p.first = false
	}
	for _, j := range jobs {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", shown(j.ID), j.Status, j.Version, shown(j.Bucket))
	}
	return w.Flush()
}

func (p *listPrinter) end() error {
	switch {
	case p.json && p.first:
		_, err := io.WriteString(p.out, `{"jobs":[]}`+"\n")
		return err
	case p.json:
		_, err := io.WriteString(p.out, "]}\n")
		return err
	case p.first:
		return p.page(nil) // the header of an empty table
	}
	return nil
}

func newTrigger() *cobra.Command {
	var (
		api              apiClient
		payload, trigger string
	)
	cmd := &cobra.Command{
		Use:   "trigger BUCKET",
		Short: "Fire every active job of a bucket once (prints the trigger id)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := fireRequest(trigger, payload)
			if err != nil {
				return err
			}
			return api.do(cmd.OutOrStdout(), http.MethodPost, "/v1/buckets/"+url.PathEscape(args[0])+"/trigger", b)
		},
	}
	api.register(cmd)
	cmd.Flags().StringVar(&payload, "payload", "", "JSON payload for every fire instead of each job's")
	cmd.Flags().StringVar(&trigger, "trigger-id", "", "idempotency key of this trigger (default: random)")
	return cmd
}

// scheduleLine shows one of a job's several schedules on one line, like
// "cron 0 9 * * 1-5 tz Europe/Berlin dst gap skip".
func scheduleLine(m codecs.ScheduleDef) string {
	var parts []string
	for _, f := range [][2]string{{"cron", m.Cron}, {"every", m.Every}, {"at", m.At}, {"tz", shown(m.TZ)}} {
		if f[1] != "" {
			parts = append(parts, f[0]+" "+f[1])
		}
	}
	if d := m.DST; d != nil {
		parts = append(parts, "dst gap "+cmp.Or(d.Gap, "shift")+", overlap "+cmp.Or(d.Overlap, "first"))
	}
	return strings.Join(parts, " ")
}
