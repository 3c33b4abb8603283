package main

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/codecs"
)

// newCalendars is `chronos calendars`: named calendars that jobs exclude
// (exclude.calendars), through the HTTP API.
func newCalendars() *cobra.Command {
	var api apiClient
	cmd := &cobra.Command{Use: "calendars", Short: "Manage named calendars (dates that jobs naming them do not fire on)"}
	api.register(cmd)
	var def codecs.CalendarDef
	put := &cobra.Command{
		Use:   "put NAME --date YYYY-MM-DD...",
		Short: "Create or replace a calendar; every job naming it follows from its next time on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if def.Dates == nil {
				def.Dates = []string{}
			}
			body, err := json.Marshal(def)
			if err != nil {
				return err
			}
			return api.do(cmd.OutOrStdout(), http.MethodPut, calendarPath(args[0]), body)
		},
	}
	put.Flags().StringArrayVar(&def.Dates, "date", nil, "a day (YYYY-MM-DD) the calendar holds (repeatable)")
	put.Flags().StringVar(&def.Description, "description", "", "what the calendar is (at most 1024 bytes)")
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a calendar", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return api.do(cmd.OutOrStdout(), http.MethodGet, calendarPath(args[0]), nil)
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a calendar (jobs naming it then exclude nothing by it)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return api.do(cmd.OutOrStdout(), http.MethodDelete, calendarPath(args[0]), nil)
		},
	}
	cmd.AddCommand(put, get, del)
	return cmd
}

func calendarPath(name string) string { return "/v1/calendars/" + url.PathEscape(name) }
