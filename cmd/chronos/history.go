package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/topology"
)

// historyEntry is one command for a job on chronos-jobs.
type historyEntry struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Time is the record's timestamp (zero, omitted in JSON, when it has
	// none or one JSON cannot write: see codecs.CheckRecordTime).
	Time  time.Time `json:"time,omitzero"`
	Actor string    `json:"actor"`
	Op    string    `json:"op"`
}

func newHistory() *cobra.Command {
	var (
		conn    connFlags
		layout  layoutFlags
		output  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Show who changed a job and when: every command for it on chronos-jobs, with its chronos-actor",
		Long: "Read the job's partition of chronos-jobs from its start to its current end and print every command " +
			"whose key is ID: offset, record time, the token that sent it through the API (header chronos-actor; " +
			"\"-\" for records produced directly to Kafka) and the op. Kafka's retention bounds how far back it goes.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			kafka, err := conn.config()
			if err != nil {
				return err
			}
			entries, err := jobHistory(ctx, kafka, string(layout.layout().Jobs()), args[0])
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return printHistory(cmd.OutOrStdout(), entries, output)
		},
	}
	fs := cmd.Flags()
	conn.register(fs, "bootstrap brokers")
	layout.register(fs)
	fs.StringVarP(&output, "output", "o", "table", "table or json (one object per line)")
	fs.DurationVar(&timeout, "timeout", time.Minute, "give up reading the partition after this long")
	return cmd
}

// jobHistory reads the partition of id on topic up to its current end and
// returns the records keyed id.
func jobHistory(ctx context.Context, kafka clients.Config, topic, id string) ([]historyEntry, error) {
	admCl, err := kafka.NewKgo()
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	admCl.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	n := int32(len(ends[topic]))
	if n == 0 {
		return nil, fmt.Errorf("topic %s not found", topic)
	}
	p := topology.Partition(id, n)
	end, ok := ends.Lookup(topic, p)
	if !ok || end.Offset <= 0 {
		return nil, nil
	}
	cl, err := kafka.NewKgo(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []historyEntry
	for next := int64(0); next < end.Offset; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s partition %d up to offset %d (at %d): %w", topic, p, end.Offset, next, err)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return nil, ferr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Offset < end.Offset && string(r.Key) == id {
				out = append(out, entryOf(r))
			}
		})
	}
	return out, nil
}

// knownOps are the ops history prints as sent (others print as "?": a
// hostile record's op is not echoed to a terminal).
var knownOps = []string{codecs.OpPut, codecs.OpDelete, codecs.OpPause, codecs.OpResume, codecs.OpFire, codecs.OpBackfill, codecs.OpCancelBackfill}

func entryOf(r *kgo.Record) historyEntry {
	e := historyEntry{Partition: r.Partition, Offset: r.Offset, Actor: "-", Op: "?"}
	if codecs.CheckRecordTime(r.Timestamp) == nil {
		e.Time = r.Timestamp.UTC()
	}
	for _, h := range r.Headers {
		if h.Key == api.ActorHeader {
			// Bounded: a producer may send a header of most of a megabyte.
			e.Actor = truncActor(h.Value)
		}
	}
	var v struct {
		Op string `json:"op"`
	}
	switch {
	case r.Value == nil:
		e.Op = "(tombstone)"
	case json.Unmarshal(r.Value, &v) == nil && slices.Contains(knownOps, v.Op):
		e.Op = v.Op
	}
	return e
}

// maxActorBytes bounds the actor history shows (token names have at most
// 64 bytes).
const maxActorBytes = 256

// truncActor returns an actor header's value, cut to maxActorBytes and
// marked with "…" when longer.
func truncActor(v []byte) string {
	if len(v) <= maxActorBytes {
		return string(v)
	}
	return string(v[:maxActorBytes]) + "…"
}

func printHistory(out io.Writer, entries []historyEntry, output string) error {
	if output == "json" {
		enc := json.NewEncoder(out)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "OFFSET\tTIME\tACTOR\tOP")
	for _, e := range entries {
		at := "-" // no usable record time
		if !e.Time.IsZero() {
			at = e.Time.Format(time.RFC3339Nano)
		}
		fmt.Fprintf(w, "%d\t%s\t%q\t%s\n", e.Offset, at, e.Actor, e.Op)
	}
	return w.Flush()
}
