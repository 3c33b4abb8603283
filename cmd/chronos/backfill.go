package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/codecs"
)

// newJobsBackfill is `chronos jobs backfill ID --from T --to T` (start a
// backfill of [from, to)) and `chronos jobs backfill ID --cancel`.
func newJobsBackfill(api *apiClient) *cobra.Command {
	var body codecs.BackfillBody
	var cancel bool
	cmd := &cobra.Command{
		Use:   "backfill ID (--from TIME --to TIME | --cancel)",
		Short: "Dispatch every scheduled time of a job in a past range [from, to), or cancel its backfill",
		Long: "Dispatch every scheduled time of a job in the past range [--from, --to) with the fire_id each had, " +
			"flagged \"backfill\": true, at the instances' --backfill-rate; GET (chronos jobs get ID) shows its progress. " +
			"--cancel stops the job's backfill in progress.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/jobs/" + url.PathEscape(args[0]) + "/backfill"
			if cancel {
				if body != (codecs.BackfillBody{}) {
					return &exitError{code: 1, err: errors.New("--cancel takes no --from or --to")}
				}
				if err := api.mustExist(args[0], false); err != nil {
					return err
				}
				return api.do(cmd.OutOrStdout(), http.MethodDelete, path, nil)
			}
			if err := checkIDArg(args[0], false); err != nil {
				return err
			}
			if _, _, err := codecs.ParseBackfillRange(body.From, body.To); err != nil {
				return &exitError{code: 1, err: err}
			}
			b, err := json.Marshal(body)
			if err != nil {
				return err
			}
			return api.do(cmd.OutOrStdout(), http.MethodPost, path, b)
		},
	}
	cmd.Flags().StringVar(&body.From, "from", "", "first time of the range (included), RFC 3339")
	cmd.Flags().StringVar(&body.To, "to", "", "end of the range (excluded), RFC 3339, not in the future")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the job's backfill in progress")
	return cmd
}
