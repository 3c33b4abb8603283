package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
)

func newTail() *cobra.Command {
	var f tailFlags
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print dispatch events from chronos-dispatch, one JSON object per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, string(f.layout.layout().Dispatch()), printRaw)
		},
	}
	f.register(cmd.Flags(), "events")
	return cmd
}

// tailFlags are the flags of a command that reads one topic (tail, rejects).
type tailFlags struct {
	conn      connFlags
	layout    layoutFlags
	count     int
	timeout   time.Duration
	beginning bool
}

func (f *tailFlags) register(fs *pflag.FlagSet, noun string) {
	f.conn.register(fs, "bootstrap brokers")
	fs.IntVar(&f.count, "count", 0, "exit 0 after this many "+noun+" (0: until interrupted)")
	fs.DurationVar(&f.timeout, "timeout", 0, "exit non-zero if --count "+noun+" have not arrived by then (0: no limit)")
	fs.BoolVar(&f.beginning, "from-beginning", false, "start at the beginning of the topic instead of its end")
	f.layout.register(fs)
}

// run prints topic's records with print until interrupted, --count or --timeout.
func (f *tailFlags) run(cmd *cobra.Command, topic string, print func(io.Writer, *kgo.Record)) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	kafka, err := f.conn.config()
	if err != nil {
		return err
	}
	return tail(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), kafka, topic, f.count, f.beginning, print)
}

// printRaw prints a record's value as it is, one per line.
func printRaw(out io.Writer, r *kgo.Record) { fmt.Fprintf(out, "%s\n", r.Value) }

func tail(ctx context.Context, out, errOut io.Writer, kafka clients.Config, topic string, count int, beginning bool, print func(io.Writer, *kgo.Record)) error {
	start := kgo.NewOffset().AtEnd()
	if beginning {
		start = kgo.NewOffset().AtStart()
	}
	cl, err := kafka.NewKgo(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	printed := 0
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.Canceled) {
				fmt.Fprintf(errOut, "chronos tail: %s[%d]: %v\n", e.Topic, e.Partition, e.Err)
			}
		}
		it := fs.RecordIter()
		for !it.Done() {
			r := it.Next()
			print(out, r)
			if printed++; count > 0 && printed >= count {
				return nil
			}
		}
	}
	if count > 0 && printed < count {
		return &exitError{code: 1, err: fmt.Errorf("timed out after %d of %d events", printed, count)}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && count > 0 {
		return &exitError{code: 1, err: errors.New("timed out")}
	}
	return nil
}
