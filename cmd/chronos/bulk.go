package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/views"
)

// newJobsBulk is `chronos jobs bulk pause|resume|delete (bucket B |
// prefix P) [--note N] [--trigger-id ID] [--wait D]` and `chronos jobs
// bulk status ID`. The target is an argument, not a flag: flags also read
// CHRONOS_* variables, and a CHRONOS_BUCKET or CHRONOS_PREFIX left in the
// environment for another command must never choose what is deleted.
func newJobsBulk(api *apiClient) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bulk",
		Short: "Pause, resume or delete every job of a bucket or of an id prefix",
		Long: "Pause, resume or delete every job of a bucket (bucket NAME) or of an id prefix (prefix PREFIX) through every shard. " +
			"The answer comes before the jobs change; `chronos jobs bulk status ID` (or --wait) shows how many jobs the shards " +
			"matched and changed. See docs/schedules.md#bulk-operations.",
	}
	for _, op := range []string{codecs.BulkPause, codecs.BulkResume, codecs.BulkDelete} {
		cmd.AddCommand(newJobsBulkOp(api, op))
	}
	cmd.AddCommand(&cobra.Command{
		Use: "status TRIGGER_ID", Short: "Show the shards' counts of a bulk operation", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return api.do(cmd.OutOrStdout(), http.MethodGet, "/v1/bulk/"+url.PathEscape(args[0]), nil)
		},
	})
	return cmd
}

func newJobsBulkOp(api *apiClient, op string) *cobra.Command {
	var body codecs.BulkBody
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   op + " (bucket NAME | prefix PREFIX)",
		Short: fmt.Sprintf("%s every job of a bucket or of an id prefix", map[string]string{"pause": "Pause", "resume": "Resume", "delete": "Delete"}[op]),
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := bulkPath(op, args[0], args[1])
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			b, err := json.Marshal(body)
			if err != nil {
				return err
			}
			answer, err := api.call(http.MethodPost, path, b)
			if err != nil {
				return err
			}
			_, _ = cmd.OutOrStdout().Write(answer)
			if wait <= 0 {
				return nil
			}
			var a struct {
				Status string `json:"status"`
			}
			if err := json.Unmarshal(answer, &a); err != nil || a.Status == "" {
				return fmt.Errorf("bulk: the answer names no status: %s", answer)
			}
			return waitBulk(cmd, api, a.Status, wait)
		},
	}
	cmd.Flags().StringVar(&body.TriggerID, "trigger-id", "", "names the operation (default: generated); a shard that remembers it does not run it again")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until every shard has finished, and print the counts")
	if op == codecs.BulkPause {
		cmd.Flags().StringVar(&body.Note, "note", "", "why the jobs are paused (each paused job carries it)")
	}
	return cmd
}

// bulkPath is the API path of a bulk op on "bucket" NAME or "prefix"
// PREFIX.
func bulkPath(op, kind, target string) (string, error) {
	switch kind {
	case "bucket":
		if err := codecs.ValidateBucket(target); err != nil || target == "" {
			return "", fmt.Errorf("bucket %q: %w", target, errors.Join(err, errEmpty(target)))
		}
		return "/v1/buckets/" + url.PathEscape(target) + "/" + op, nil
	case "prefix":
		if err := codecs.ValidatePrefix(target); err != nil {
			return "", err
		}
		seg := url.PathEscape(target)
		if target == "." || target == ".." {
			// A dot segment sent as such is cleaned away by the server's
			// mux (another route); escaped, it is the prefix.
			seg = strings.ReplaceAll(target, ".", "%2E")
		}
		return "/v1/prefixes/" + seg + "/" + op, nil
	}
	return "", fmt.Errorf("want `%s bucket NAME` or `%s prefix PREFIX`, not %q", op, op, kind)
}

// errEmpty is an error for an empty target (nil otherwise).
func errEmpty(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	return nil
}

// waitBulk polls the operation's status until every shard has finished it
// (printing the counts) or d has passed (an error).
func waitBulk(cmd *cobra.Command, api *apiClient, path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		// 404 until the first shard has queued it.
		status, answer, err := api.request(http.MethodGet, path, "", nil, 30*time.Second)
		if err != nil {
			return err
		}
		if status >= 300 && status != http.StatusNotFound {
			return problemAnswer(status, answer)
		}
		var st views.BulkStatus
		if status == http.StatusOK && json.Unmarshal(answer, &st) == nil && st.Done {
			_, _ = cmd.OutOrStdout().Write(answer)
			return nil
		}
		if time.Now().After(deadline) {
			return &exitError{code: 1, err: fmt.Errorf("bulk: not every shard finished within %s (%d of %d); see %s", d, st.Finished, st.Shards, path)}
		}
		time.Sleep(200 * time.Millisecond)
	}
}
