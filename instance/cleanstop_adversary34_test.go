package instance_test

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/testenv"
)

// marks lists the CHRONOS-UNSETTLED files under dir, in stores (not in
// the copies a start moved aside, DIR.discarded: a store a rebalance
// closed with writes in flight keeps its mark there, and the partition
// is restored from its changelog; the Apache Kafka step of a loaded CI
// run found 7 marks where 4 stores ran).
func adv34Marks(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasSuffix(d.Name(), store.DiscardedSuffix) {
			t.Logf("a discarded store copy: %s", path)
			return filepath.SkipDir
		}
		if d.Name() == "CHRONOS-UNSETTLED" {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// TestAdv34CleanStopUnderLoadKeepsStores: a clean stop (the instance's
// context cancelled, Run returned) while advances, settles and
// completions are in flight must leave every scheduler store settled (the
// docs: "A clean stop (SIGTERM) finishes the callbacks in flight and
// commits. The scheduler's partition stores are kept").
func TestAdv34CleanStopUnderLoadKeepsStores(t *testing.T) {
	env := testenv.New(t, 4)
	logs := &syncBuffer{}
	cfg := env.Config()
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	first := env.Start(cfg)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	for i := 0; i < 400; i++ {
		def := codecs.JobDef{Every: "1s", Payload: []byte(`{"v":1}`)}
		if i%2 == 0 {
			def = codecs.JobDef{At: t0.Add(time.Duration(1+i%7) * time.Second).Format(time.RFC3339), Payload: []byte(`{"v":1}`)}
		}
		env.Put(fmt.Sprintf("j%03d", i), def, t0)
	}
	env.WaitApplied()
	for s := 1; s <= 8; s++ {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	time.Sleep(300 * time.Millisecond)
	// every recovered scheduler store, and since adversary round 48 every
	// history store, is marked while it runs
	var sched, hist int
	running := adv34Marks(t, cfg.DataDir)
	for _, m := range running {
		switch {
		case strings.Contains(m, "scheduler-table"):
			sched++
		case strings.Contains(m, "history-table"):
			hist++
		}
	}
	require.Equal(t, 4, sched, "every recovered scheduler store is marked while it runs: %v", running)
	require.Equal(t, 4, hist, "every recovered history store is marked while it runs: %v", running)
	first.Stop()
	marks := adv34Marks(t, cfg.DataDir)
	re := regexp.MustCompile(`closing with writes the changelog may not hold[^\n]*`)
	why := re.FindAllString(logs.String(), 5)
	require.Empty(t, marks, "a clean stop left stores unsettled (discarded at the next start): %v; why: %s", marks, strings.Join(why, " | "))
}
