package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newHealth() *cobra.Command {
	var (
		addr  string
		ready bool
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a running instance: exit 0 if /healthz (or /readyz with --ready) answers 200",
		Long: "Probe a running instance, for container health checks in images without a shell or curl: " +
			"exit 0 if /healthz (or /readyz with --ready) answers 200 within 5 s, else 1 with the reason.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(strings.TrimRight(addr, "/") + path)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: 1, err: fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))}
			}
			_, err = cmd.OutOrStdout().Write(body)
			return err
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "http://127.0.0.1:8080", "base URL of the instance")
	cmd.Flags().BoolVar(&ready, "ready", false, "probe /readyz instead of /healthz")
	return cmd
}
