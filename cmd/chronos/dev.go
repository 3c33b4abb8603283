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
			log := f.cfg.NewLogger()
			cfg, err := f.config([]string{kafkaAddr}, log)
			if err != nil {
				return err
			}
			dataDir := cfg.DataDir
			cfg.DataDir = filepath.Join(dataDir, "state")
			if err := cfg.Validate(); err != nil { // before the broker starts
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			b, err := embedded.Start(embedded.Options{Addr: kafkaAddr, DataDir: filepath.Join(dataDir, "kafka"), Partitions: cfg.Layout.Partitions})
			if err != nil {
				return err
			}
			defer b.Close()
			log.Info("embedded broker started", "addr", b.Addrs()[0], "data_dir", filepath.Join(dataDir, "kafka"))
			cfg.Kafka.Brokers = b.Addrs()
			return serve(ctx, cfg, true)
		},
	}
	f.register(cmd.Flags(), "127.0.0.1:8080", "./.chronos")
	cmd.Flags().StringVar(&kafkaAddr, "kafka-addr", "127.0.0.1:9092", "address of the embedded broker")
	return cmd
}
