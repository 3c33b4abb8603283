package views_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/views"
)

// TestAdversary63JobViewLargePayloads: jobs with ~990 kB
// payloads (near the largest --max-payload the default --batch-bytes
// allows) interleaved with small ones, on one partition so one view store
// takes them all: the view (written against 807405f's 2 MiB memtables,
// where a recovery batch of 256 KiB plus one such record is over half a
// memtable; Pebble's 4 MiB again since 1b16a2e) shows every job, lists each bucket whole, and a second view
// recovering from the table on a fresh disk does too.
func TestAdversary63JobViewLargePayloads(t *testing.T) {
	env := testenv.New(t, 1)
	cfg := env.Config()
	cfg.Limits = codecs.Limits{MaxPayload: 1<<20 - 4<<10}
	env.Start(cfg)
	t0 := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	env.Tick(t0)
	big := []byte(`"` + strings.Repeat("p", 990_000) + `"`)
	const nBig, nSmall = 24, 400
	for i := range nSmall {
		env.Put(fmt.Sprintf("s%03d", i), codecs.JobDef{Every: "1h", Bucket: "small", Payload: []byte(`{"n":1}`)}, t0)
		if i%(nSmall/nBig) == 0 && i/(nSmall/nBig) < nBig {
			env.Put(fmt.Sprintf("b%03d", i/(nSmall/nBig)), codecs.JobDef{Every: "1h", Bucket: "big", Payload: big}, t0)
		}
	}
	env.WaitApplied()
	check := func(name string) {
		jobs, err := views.NewJobs(env.Kafka, env.Layout, t.TempDir(), slog.Default())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- jobs.Run(ctx) }()
		defer func() { cancel(); <-done }()
		testenv.Eventually(t, 120*time.Second, func() error {
			for _, b := range []struct {
				bucket string
				n      int
			}{{"big", nBig}, {"small", nSmall}} {
				got, cursor := 0, ""
				for {
					page, next, err := jobs.List(b.bucket, cursor, 1000)
					if err != nil {
						return err
					}
					got += len(page)
					if next == "" {
						break
					}
					cursor = next
				}
				if got != b.n {
					return fmt.Errorf("%s: bucket %s lists %d jobs, want %d", name, b.bucket, got, b.n)
				}
			}
			for i := range nBig {
				if _, err := jobs.Get(fmt.Sprintf("b%03d", i)); err != nil {
					return fmt.Errorf("%s: b%03d: %w", name, i, err)
				}
			}
			return nil
		})
		t.Logf("%s: every job shown and listed after %v", name, time.Since(start).Round(time.Millisecond))
	}
	check("first view")
	check("second view, recovering from the table")
}
