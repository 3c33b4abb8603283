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
			cfg, err := f.config(brokers, f.cfg.NewLogger())
			if err != nil {
				return err
			}
			cfg.HTTP.RequireAuth = true
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, false)
		},
	}
	f.register(cmd.Flags(), "0.0.0.0:8080", "./.chronos")
	cmd.Flags().StringSliceVar(&brokers, "brokers", nil, "bootstrap brokers, host:port,...")
	return cmd
}
