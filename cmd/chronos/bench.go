package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/bench"
	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

func newBench() *cobra.Command {
	var (
		f        instanceFlags
		brokers  []string
		cfg      bench.Config
		aligned  bool
		bucket   bool
		output   string
		profile  string
		external bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure fires/s, fire delay, misses and duplicates end to end (embedded broker unless --brokers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: want table or json", output)
			}
			cfg.Mode = bench.ModeEvery
			if aligned && bucket {
				return errors.New("--aligned and --bucket: choose one")
			}
			if aligned {
				cfg.Mode = bench.ModeAligned
			}
			if bucket {
				cfg.Mode = bench.ModeBucket
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if profile != "" {
				pf, err := os.Create(profile)
				if err != nil {
					return err
				}
				defer pf.Close()
				cfg.Measuring = func() {
					if err := pprof.StartCPUProfile(pf); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "bench: cpu profile:", err)
					}
				}
				defer pprof.StopCPUProfile()
			}
			var rep *bench.Report
			var err error
			if external {
				rep, err = benchExternal(ctx, &f, brokers, cfg, cmd.ErrOrStderr())
			} else {
				rep, err = runBench(ctx, &f, brokers, cfg, cmd.ErrOrStderr())
			}
			if err != nil {
				return err
			}
			if output == "json" {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			return rep.WriteTable(cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&cfg.Jobs, "jobs", 100_000, "jobs to register")
	fs.DurationVar(&cfg.Every, "every", time.Minute, "interval of every job, spread evenly over whole seconds")
	fs.BoolVar(&aligned, "aligned", false, "all jobs due once at the same second (a burst) instead of --every")
	fs.BoolVar(&bucket, "bucket", false, "all jobs in one bucket, fired at once by one bucket trigger (a burst through the bucket fan-out) instead of --every")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "measurement window (--every), or the longest wait for a burst to drain")
	fs.StringSliceVar(&brokers, "brokers", nil, "use this Kafka cluster instead of an embedded broker")
	fs.StringVarP(&output, "output", "o", "table", "table or json")
	fs.StringVar(&profile, "cpu-profile", "", "write a CPU profile of the measured window (after registration) to this file")
	fs.IntVar(&cfg.PayloadBytes, "payload-bytes", 0, "payload of every job in bytes (a JSON string; 0: none), for payload-heavy runs")
	fs.IntVar(&cfg.InstancePID, "instance-pid", 0, "with --external: process id of the instance under test, whose peak RSS (VmHWM) the report gives")
	fs.DurationVar(&cfg.FirstFireAfter, "first-fire-after", 0, "first fires due this long after registration begins (0: estimated from --jobs; raise it when registration overruns)")
	fs.DurationVar(&cfg.Jitter, "jitter", 0, "every job's jitter (at most 1h and --every): spreads the fires, see docs/schedules.md#jitter")
	fs.BoolVar(&external, "external", false, "measure Chronos instances already running on --brokers with --topic-prefix (e.g. chronos run) instead of starting one")
	f.register(fs, "", "")
	return cmd
}

// benchExternal measures instances that run elsewhere: this process only
// registers the jobs and consumes the dispatch events, so CPU seconds and
// peak RSS in the report are the measuring process's, not the instances'.
func benchExternal(ctx context.Context, f *instanceFlags, brokers []string, cfg bench.Config, progress io.Writer) (*bench.Report, error) {
	if len(brokers) == 0 {
		return nil, errors.New("--external needs --brokers: the cluster the instances run on")
	}
	if f.cfg.Layout.Prefix == "" {
		return nil, errors.New("--external needs --topic-prefix: a prefix of its own, so jobs and fire_ids of earlier runs do not count (start the instances with the same prefix)")
	}
	if err := topology.ValidatePrefix(f.cfg.Layout.Prefix); err != nil {
		return nil, err
	}
	icfg, err := f.config(brokers, f.cfg.NewLogger())
	if err != nil {
		return nil, err
	}
	cfg.Kafka, cfg.Layout, cfg.Progress = icfg.Kafka, icfg.Layout, progress
	cfg.History = !icfg.History.Off
	return bench.Run(ctx, cfg)
}

// runBench starts the broker (unless given) and one Chronos instance in this
// process, from the same flags as dev and run, then runs the benchmark
// against them.
func runBench(ctx context.Context, f *instanceFlags, brokers []string, cfg bench.Config, progress io.Writer) (*bench.Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := f.cfg.NewLogger()
	icfg, err := f.config(brokers, log)
	if err != nil {
		return nil, err
	}
	if icfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "chronos-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		icfg.DataDir = dir
	}
	if icfg.Layout.Prefix == "" {
		icfg.Layout.Prefix = "bench-" + api.NewTriggerID()[2:10] + "."
	}
	if len(brokers) == 0 {
		icfg.Kafka.Brokers = []string{"127.0.0.1:0"} // validated before the embedded broker starts
	}
	if err := icfg.Validate(); err != nil {
		return nil, err
	}
	if icfg.History.Only {
		return nil, errors.New("--history-only: the bench's own instance must schedule; run the history group in another process (chronos run --history-only) and give this one --no-history")
	}
	if len(brokers) == 0 {
		b, err := embedded.Start(embedded.Options{Partitions: icfg.Layout.Partitions})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		icfg.Kafka.Brokers = b.Addrs()
	}
	autoMemoryLimit("/")                              // as `chronos run` does: the cgroup's limit, if GOMEMLIMIT is not set
	stopPacing := paceGC(ctx, nil, len(brokers) == 0) // and its collector (paceBase: the embedded broker's log is on this heap)
	defer stopPacing()
	inst, err := instance.New(ctx, icfg)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := inst.WaitReady(ctx); err != nil {
		return nil, err
	}
	cfg.Kafka, cfg.Layout, cfg.Progress = icfg.Kafka, icfg.Layout, progress
	cfg.History = !icfg.History.Off
	cfg.StoreWrites = inst.Scheduler().Written
	cfg.StoresHeld = store.OpenHeld
	return bench.Run(ctx, cfg)
}
