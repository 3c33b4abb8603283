package history_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/history"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
	"github.com/chronos-scheduler/chronos/views"
)

func TestActorHeaderIsTheAPIs(t *testing.T) {
	require.Equal(t, api.ActorHeader, history.ActorHeader)
}

// historyView runs a view of the history table until the test ends.
func historyView(t *testing.T, env *testenv.Env) *views.History {
	v, err := views.NewHistory(env.Kafka, env.Layout, t.TempDir(), store.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return v
}

func encodeResult(t *testing.T, r codecs.Result) []byte {
	m := codecs.ResultMsg{FireID: r.FireID(), ScheduledAt: r.ScheduledAt, Status: r.Status, Attempt: r.Attempt, Error: r.Error}
	if !r.StartedAt.IsZero() {
		m.StartedAt = &r.StartedAt
	}
	if !r.FinishedAt.IsZero() {
		m.FinishedAt = &r.FinishedAt
	}
	b, err := codecs.EncodeResult(m)
	require.NoError(t, err)
	return b
}

// TestHistoryKeepsFiresAndOutcomes runs an instance on the test broker with
// a simulated clock: jobs fire every second, an executor reports random
// outcomes for the fires (out of order, some twice, some for fires not
// dispatched yet), and bad results are written too. The history each job
// ends with equals the oracle's over everything dispatched and reported;
// every bad result becomes one reject and nothing else; the commands show
// with their actor.
func TestHistoryKeepsFiresAndOutcomes(t *testing.T) {
	t.Parallel()
	const keep = 8
	env := testenv.New(t, 3)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	cfg := env.Config()
	cfg.History.Fires = keep
	env.Start(cfg)
	view := historyView(t, env)
	rng := rand.New(rand.NewPCG(13, uint64(time.Now().UnixNano())))

	t0 := time.Date(2026, 3, 29, 0, 59, 50, 0, time.UTC)
	jobs := []string{"report-a", "report-b", "report-c", "report-d"}
	for _, id := range jobs {
		rec := &kgo.Record{Topic: string(env.Layout.Jobs()), Key: []byte(id), Value: testenv.PutCommand(id, codecs.JobDef{Every: "1s"}),
			Timestamp: t0, Headers: []kgo.RecordHeader{{Key: api.ActorHeader, Value: []byte("alice")}}}
		require.NoError(t, env.Client.ProduceSync(context.Background(), rec).FirstErr())
	}
	env.Produce(string(env.Layout.Jobs()), "report-d", []byte(`{"v":1,"op":"pause"}`), t0.Add(time.Second))
	env.WaitApplied()
	const seconds = 20
	for s := 1; s <= seconds; s++ {
		env.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	// report-a, -b and -c fire at t0+1s..t0+20s (report-d is paused).
	dispatch.WaitLen(t, 3*seconds, time.Minute)

	var results []codecs.Result
	for _, d := range dispatch.Dispatches(t) {
		for range rng.IntN(3) {
			r := codecs.Result{JobID: d.JobID, Suffix: d.FireID[len(d.JobID)+1:], ScheduledAt: d.ScheduledAt, Attempt: 1 + rng.IntN(2),
				Status:    []string{codecs.StatusStarted, codecs.StatusSucceeded, codecs.StatusFailed}[rng.IntN(3)],
				StartedAt: d.FiredAt.Add(time.Duration(rng.IntN(900)) * time.Millisecond).UTC()}
			if r.Status != codecs.StatusStarted {
				r.FinishedAt = r.StartedAt.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			}
			if r.Status == codecs.StatusFailed {
				r.Error = "exit status 1"
			}
			results = append(results, r)
		}
	}
	// Outcomes for fires the scheduler has not reached: reported before
	// their dispatch (a clock ahead on the executor's side, a replay).
	for i := range 3 {
		at := t0.Add(time.Duration(seconds+5+i) * time.Second)
		results = append(results, codecs.Result{JobID: "report-a", Suffix: at.Format(time.RFC3339Nano), ScheduledAt: at, Attempt: 1,
			Status: codecs.StatusSkipped, FinishedAt: at, Error: "maintenance window"})
	}
	rng.Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
	var keys []string
	var values [][]byte
	for i, r := range results {
		keys, values = append(keys, r.JobID), append(values, encodeResult(t, r))
		if i%4 == 0 { // a duplicate
			keys, values = append(keys, r.JobID), append(values, encodeResult(t, r))
		}
	}
	// Bad results: junk, a tombstone, another job's fire, a status that
	// does not exist, a scheduled time that is not the fire_id's.
	bad := map[string][]byte{
		"junk":      []byte(`{"v":1,`),
		"other job": []byte(`{"v":1,"fire_id":"report-b@2026-03-29T00:59:51Z","scheduled_at":"2026-03-29T00:59:51Z","status":"skipped","finished_at":"2026-03-29T01:00:00Z"}`),
		"status":    []byte(`{"v":1,"fire_id":"report-a@2026-03-29T00:59:51Z","scheduled_at":"2026-03-29T00:59:51Z","status":"done","finished_at":"2026-03-29T01:00:00Z"}`),
		"time":      []byte(`{"v":1,"fire_id":"report-a@2026-03-29T00:59:51Z","scheduled_at":"2026-03-29T00:59:52Z","status":"skipped","finished_at":"2026-03-29T01:00:00Z"}`),
		"tombstone": nil,
	}
	for _, v := range bad {
		keys, values = append(keys, "report-a"), append(values, v)
	}
	env.ProduceMany(string(env.Layout.Results()), keys, values, t0.Add(time.Minute))
	// A good result on the wrong partition is refused as well.
	wrong := (topology.Partition("report-c", env.Layout.Partitions) + 1) % env.Layout.Partitions
	manual, err := kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer manual.Close()
	require.NoError(t, manual.ProduceSync(context.Background(), &kgo.Record{Topic: string(env.Layout.Results()), Key: []byte("report-c"), Partition: wrong,
		Value: encodeResult(t, codecs.Result{JobID: "report-c", Suffix: "x", ScheduledAt: t0, Attempt: 1, Status: codecs.StatusSkipped, FinishedAt: t0})}).FirstErr())

	rejects.WaitLen(t, len(bad)+1, time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Results()), time.Minute)
	env.WaitConsumed(string(env.Layout.HistoryGroup()), string(env.Layout.Dispatch()), time.Minute)
	codes := map[string]int{}
	for _, r := range rejects.Records() {
		rej, err := codecs.DecodeReject(r.Value)
		require.NoError(t, err)
		require.Equal(t, string(env.Layout.Results()), rej.Topic)
		codes[rej.Code]++
	}
	require.Equal(t, map[string]int{codecs.CodeMalformed: 1, codecs.CodeInvalidField: 3, codecs.CodeTombstone: 1, codecs.CodeWrongPartition: 1}, codes)

	dispatches := dispatch.Dispatches(t)
	for _, id := range jobs {
		var ds []codecs.Dispatch
		for _, d := range dispatches {
			if d.JobID == id {
				ds = append(ds, d)
			}
		}
		var rs []codecs.Result
		for _, r := range results {
			if r.JobID == id {
				rs = append(rs, r)
			}
		}
		want := views.FiresOf(id, codecs.History{Fires: history.Oracle(ds, rs, keep)})
		testenv.Eventually(t, time.Minute, func() error {
			fires, _, err := view.Get(id)
			if err != nil {
				return err
			}
			if !slices.EqualFunc(fires, want, fireEqual) {
				return fmt.Errorf("job %s: history has %d fires %+v, want %d %+v", id, len(fires), fires, len(want), want)
			}
			return nil
		})
		_, changes, err := view.Get(id)
		require.NoError(t, err)
		require.NotEmpty(t, changes, id)
		put := changes[len(changes)-1]
		require.Equal(t, "put", put.Op)
		require.Equal(t, "alice", put.Actor)
		require.Equal(t, "every 1s", put.Detail)
		require.True(t, put.At.Equal(t0))
		if id == "report-d" {
			require.Len(t, changes, 2)
			require.Equal(t, "pause", changes[0].Op)
			require.Equal(t, "", changes[0].Actor)
		}
	}
}

// fireEqual compares two read-model fires by value.
func fireEqual(a, b views.Fire) bool {
	return fmt.Sprintf("%+v", derefFire(a)) == fmt.Sprintf("%+v", derefFire(b))
}

func derefFire(f views.Fire) []any {
	t := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	fl := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return []any{f.FireID, f.ScheduledAt.UTC().Format(time.RFC3339Nano), f.Trigger, f.Bucket, f.Missed, t(f.DispatchedAt), fl(f.DelaySeconds),
		f.Status, f.Attempt, t(f.StartedAt), t(f.FinishedAt), fl(f.DurationSeconds), f.Error}
}
