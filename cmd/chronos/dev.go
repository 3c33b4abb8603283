package main

import (
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/embedded"
)

func newDev() *cobra.Command {
	var f instanceFlags
	var kafkaAddr string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything in one process on an embedded broker (persisted under --data-dir)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := f.logger()
			if err != nil {
				return err
			}
			if err := f.auth.check(f.httpAddr, f.apiToken, false, log); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			b, err := embedded.Start(embedded.Options{Addr: kafkaAddr, DataDir: filepath.Join(f.dataDir, "kafka"), Partitions: f.layout.partitions})
			if err != nil {
				return err
			}
			defer b.Close()
			log.Info("embedded broker started", "addr", b.Addrs()[0], "data_dir", filepath.Join(f.dataDir, "kafka"))
			return f.serve(ctx, b.Addrs(), filepath.Join(f.dataDir, "state"), log)
		},
	}
	f.register(cmd.Flags(), "127.0.0.1:8080")
	cmd.Flags().StringVar(&kafkaAddr, "kafka-addr", "127.0.0.1:9092", "address of the embedded broker")
	return cmd
}
