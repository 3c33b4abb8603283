package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
)

func newRejects() *cobra.Command {
	var (
		f      tailFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "rejects",
		Short: "Print chronos-rejects: inputs that could not be applied, with their reason",
		Long: `Print the records of chronos-rejects, one line each: when, where the input was
(topic[partition]@offset), the code, the field and reason, and the input's key and
value (a sample of at most 1 KiB each, quoted, with every invisible or
direction-changing character escaped) with their sizes. -o json prints the
reject records as they are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			print := printReject
			switch output {
			case "text":
			case "json":
				print = printRaw
			default:
				return &exitError{code: 1, err: fmt.Errorf("--output %q: want text or json", output)}
			}
			return f.run(cmd, string(f.layout.layout().Rejects()), print)
		},
	}
	fs := cmd.Flags()
	f.register(fs, "rejects")
	fs.StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// printReject prints one reject readably. Every string that came from the
// rejected input is quoted with strconv.Quote, so control, format
// (bidi, zero-width) and other invisible characters show as escapes.
func printReject(out io.Writer, r *kgo.Record) {
	rj, err := codecs.DecodeReject(r.Value)
	if err != nil {
		fmt.Fprintf(out, "%s[%d]@%d: not a reject record (%v): %s\n", r.Topic, r.Partition, r.Offset, err,
			strconv.Quote(string(r.Value[:min(len(r.Value), codecs.RejectSampleBytes)])))
		return
	}
	field := ""
	if rj.Field != "" {
		field = " " + strconv.Quote(rj.Field)
	}
	at := "-" // the record had no usable timestamp
	if !rj.RejectedAt.IsZero() {
		at = rj.RejectedAt.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(out, "%s %s[%d]@%d %s%s: %s\n", at, rj.Topic, rj.Partition, rj.Offset,
		rj.Code, field, strconv.Quote(rj.Reason))
	fmt.Fprintf(out, "  key   %s\n", sampleText(rj.Key, rj.KeySize, ""))
	fmt.Fprintf(out, "  value %s\n", sampleText(rj.Value, rj.ValueSize, rj.ValueSHA256))
}

// sampleText shows a sample of an input's bytes: null, or quoted with its
// size, marked when it is only a prefix.
func sampleText(b []byte, size int, sha string) string {
	if b == nil {
		return "null"
	}
	if size < len(b) { // a v1 reject: no sizes
		size = len(b)
	}
	s := strconv.Quote(string(b))
	if len(b) < size {
		s += "…"
	}
	s += fmt.Sprintf(" (%d bytes", size)
	if sha != "" {
		s += ", sha256 " + sha
	}
	return s + ")"
}
