package main

import (
	"errors"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func newRun() *cobra.Command {
	var f instanceFlags
	var brokers []string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an instance against an existing Kafka cluster; instances share the partitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(brokers) == 0 {
				return errors.New("--brokers (or CHRONOS_BROKERS) is required")
			}
			log, err := f.logger()
			if err != nil {
				return err
			}
			if err := f.auth.check(f.httpAddr, f.apiToken, true, log); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return f.serve(ctx, brokers, f.dataDir, log)
		},
	}
	f.register(cmd.Flags(), "0.0.0.0:8080")
	cmd.Flags().StringSliceVar(&brokers, "brokers", nil, "bootstrap brokers, host:port,...")
	return cmd
}
