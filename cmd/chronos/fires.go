package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	httpapi "github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/views"
)

// newJobsFires is `chronos jobs fires ID`: the job's recent fires from the
// history group, with delay and outcome.
func newJobsFires(api *apiClient) *cobra.Command {
	var (
		output string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "fires ID",
		Short: "Show a job's recent fires: scheduled and dispatch time, delay, outcome reported on chronos-results, duration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			answer, err := historyCall(api, args[0], "fires", limit, output)
			if err != nil || output == "json" {
				if err == nil {
					_, _ = cmd.OutOrStdout().Write(answer)
				}
				return err
			}
			var l httpapi.FireList
			if err := json.Unmarshal(answer, &l); err != nil {
				return err
			}
			printFires(cmd.OutOrStdout(), l.Fires)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many (newest first; 0: all kept)")
	return cmd
}

// newJobsHistory is `chronos jobs history ID`: who changed the job, when
// and how, from the history group.
func newJobsHistory(api *apiClient) *cobra.Command {
	var (
		output string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show who changed a job and when: its recent commands with the token that sent them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			answer, err := historyCall(api, args[0], "history", limit, output)
			if err != nil || output == "json" {
				if err == nil {
					_, _ = cmd.OutOrStdout().Write(answer)
				}
				return err
			}
			var l httpapi.ChangeList
			if err := json.Unmarshal(answer, &l); err != nil {
				return err
			}
			printChanges(cmd.OutOrStdout(), l.Changes)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many (newest first; 0: all kept)")
	return cmd
}

func historyCall(api *apiClient, id, what string, limit int, output string) ([]byte, error) {
	if output != "table" && output != "json" {
		return nil, fmt.Errorf("-o %q: want table or json", output)
	}
	if err := checkIDArg(id, true); err != nil {
		return nil, err
	}
	path := "/v1/jobs/" + url.PathEscape(id) + "/" + what
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	return api.call(http.MethodGet, path, nil)
}

func printFires(out io.Writer, fires []views.Fire) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SCHEDULED\tTRIGGER\tDISPATCHED\tDELAY\tSTATUS\tATTEMPT\tDURATION\tFIRE ID\tERROR")
	for _, f := range fires {
		dispatched, delay, duration, attempt := "-", "-", "-", "-"
		if f.DispatchedAt != nil {
			dispatched = f.DispatchedAt.UTC().Format("15:04:05.000")
		}
		if f.DelaySeconds != nil {
			delay = seconds(*f.DelaySeconds)
		}
		if f.DurationSeconds != nil {
			duration = seconds(*f.DurationSeconds)
		}
		if f.Attempt > 0 {
			attempt = strconv.Itoa(f.Attempt)
		}
		trigger := f.Trigger
		if trigger == "" {
			trigger = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ScheduledAt.UTC().Format(time.RFC3339), trigger, dispatched, delay,
			f.Status, attempt, duration, shown(f.FireID), shownOrDash(f.Error))
	}
	_ = w.Flush()
}

func printChanges(out io.Writer, changes []views.Change) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tACTOR\tOP\tDETAIL\tOFFSET")
	for _, c := range changes {
		actor := c.Actor
		if actor == "" {
			actor = "- (direct to Kafka)"
		} else {
			actor = shown(actor)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\n", c.At.UTC().Format(time.RFC3339Nano), actor, c.Op, shownOrDash(c.Detail), c.Partition, c.Offset)
	}
	_ = w.Flush()
}

func shownOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return shown(s)
}

// seconds formats a duration in seconds for a table: milliseconds below a
// minute, else rounded to the second.
func seconds(s float64) string {
	if math.Abs(s) >= 100*365*24*3600 {
		// Past what a time.Duration holds (292 years): a result's times
		// may be anywhere from 1970 to 9999.
		return strconv.FormatFloat(s, 'f', 0, 64) + "s"
	}
	d := time.Duration(s * float64(time.Second))
	if d < time.Minute && d > -time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
