package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/tester"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// noProducer is the producer of schedulers whose tests dispatch nothing.
type noProducer struct{}

func (noProducer) ProduceSync(context.Context, string, []Msg) error {
	return errors.New("test: this test dispatches nothing")
}

// newTestScheduler returns a scheduler of one partition on an in-memory
// disk, with metrics on a fresh registry.
func newTestScheduler(t *testing.T) *Scheduler {
	t.Helper()
	s, err := New(Config{Layout: topology.Layout{Names: topology.Names{Prefix: "t."}, Partitions: 1, Replication: 1},
		DataDir: "/data", Store: store.Options{FS: vfs.NewMem()}, Producer: noProducer{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics(prometheus.NewRegistry())})
	require.NoError(t, err)
	return s
}

func TestClassify(t *testing.T) {
	t.Parallel()
	reserved := &codecs.Error{Code: codecs.CodeReservedID, Field: "id", Reason: "the key belongs to a shard record"}
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"no error", nil, outcomeApplied},
		{"a codecs error", &codecs.Error{Code: codecs.CodeUnknownJob}, outcomeRejected},
		{"a wrapped codecs error", fmt.Errorf("decoding: %w", &codecs.Error{Code: codecs.CodeMalformed}), outcomeRejected},
		{"an error marked invalid", invalid(errors.New("codecs: corrupt job record")), outcomeRejected},
		{"revoked", errRevoked, outcomeWithheld},
		{"revoked, wrapped", fmt.Errorf("advance: %w", errRevoked), outcomeWithheld},
		{"a stale loopback", staleLoop("complete", 3, &codecs.JobRecord{Version: 4}, nil), outcomeDropped},
		{"a stale loopback on an unreadable record", staleLoop("purge", 3, nil, reserved), outcomeDropped},
		{"a store error", errors.New("pebble: closed"), outcomeFailed},
		{"a producer error", fmt.Errorf("scheduler: producing 3 dispatch events: %w", context.DeadlineExceeded), outcomeFailed},
		{"the fence", errFrozen, outcomeFailed},
		{"no store", fmt.Errorf("scheduler: no open store for partition %d", 2), outcomeFailed},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, classify(tc.err), "%s: %v", tc.name, tc.err)
	}
	require.NoError(t, invalid(nil))
}

// TestResolveOnGokaTester runs resolve in a goka processor on goka's tester:
// an invalid input becomes one reject carrying the record, a stale one and
// an applied one none, the partition goes on after each, and commands are
// counted by op and result.
func TestResolveOnGokaTester(t *testing.T) {
	s := newTestScheduler(t)
	errs := map[string]error{
		"ok":      nil,
		"invalid": &codecs.Error{Code: codecs.CodeVersionConflict, Field: "if_version", Reason: "job is at version 2, not 1"},
		"corrupt": invalid(errors.New("codecs: corrupt job record")),
		"stale":   staleLoop("complete", 1, nil, nil),
	}
	in := goka.Stream("t.in")
	g := goka.DefineGroup("t.group",
		goka.Input(in, new(codec.Bytes), func(ctx goka.Context, msg any) {
			raw, _ := msg.([]byte)
			s.resolve(ctx, raw, "put", errs[ctx.Key()])
		}),
		goka.Output(s.cfg.Layout.Rejects(), new(codec.Bytes)))
	tt := tester.New(t)
	p, err := goka.NewProcessor(nil, g, goka.WithTester(tt))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	rejects := tt.NewQueueTracker(string(s.cfg.Layout.Rejects()))

	for i, key := range []string{"ok", "invalid", "stale", "corrupt", "ok"} {
		raw := []byte(fmt.Sprintf(`{"n":%d}`, i))
		tt.Consume(string(in), key, raw)
		_, v, ok := rejects.NextRaw()
		if classify(errs[key]) != outcomeRejected {
			require.False(t, ok, "%s: a reject", key)
			continue
		}
		require.True(t, ok, "%s: no reject", key)
		r, err := codecs.DecodeReject(v)
		require.NoError(t, err)
		require.Equal(t, raw, r.Value, key)
		require.Equal(t, string(in), r.Topic)
		var ce *codecs.Error
		if errors.As(errs[key], &ce) {
			require.Equal(t, ce.Code, r.Code)
		} else {
			require.Equal(t, codecs.CodeMalformed, r.Code)
			require.Equal(t, errs[key].Error(), r.Reason)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the processor stopped: %v", err)
	default:
	}
	m := s.cfg.Metrics.commands
	require.Equal(t, 2.0, testutil.ToFloat64(m.WithLabelValues("put", "applied")))
	require.Equal(t, 2.0, testutil.ToFloat64(m.WithLabelValues("put", "rejected")))
}

// TestResolveWithholdsTheCommit checks the two outcomes that stop a goka
// processor on the package's recording context (simctx_test.go): revoked
// leaves the input uncommitted and returns; transient does the same and
// fails the callback.
func TestResolveWithholdsTheCommit(t *testing.T) {
	t.Parallel()
	s := newTestScheduler(t)
	storeErr := errors.New("pebble: disk full")
	for _, tc := range []struct {
		err    error
		want   outcome
		failed bool
	}{
		{fmt.Errorf("x: %w", errRevoked), outcomeWithheld, false},
		{storeErr, outcomeFailed, true},
		{errFrozen, outcomeFailed, true},
	} {
		ctx := &simCtx{topic: "t.in", key: "k", table: simMapTable{}, ctx: context.Background()}
		var got outcome
		err := ctx.run(func(ctx goka.Context, msg any) { got = s.resolve(ctx, msg.([]byte), "", tc.err) }, []byte("{}"))
		require.ErrorIs(t, err, tc.err)
		require.ErrorIs(t, ctx.commitErr, tc.err, "the commit is withheld")
		if tc.failed {
			require.False(t, errors.Is(err, errSimNotCommitted), "the callback failed (goka panics out of Fail)")
		} else {
			require.ErrorIs(t, err, errSimNotCommitted)
			require.Equal(t, tc.want, got)
		}
		require.Empty(t, ctx.outs, "nothing emitted")
	}
}

// TestUnsupportedShardTriggerIsRejectedWithItsValue: a loopback-only kind
// (complete, settle, purge) written to chronos-shard-triggers is rejected,
// and the reject carries the record. Before resolve the reject was written
// without it (value null, no SHA-256, as for a tombstone).
func TestUnsupportedShardTriggerIsRejectedWithItsValue(t *testing.T) {
	t.Parallel()
	s := newTestScheduler(t)
	for _, kind := range []string{codecs.KindComplete, codecs.KindSettle, codecs.KindPurge} {
		raw := codecs.EncodeInternal(codecs.ShardTrigger{Kind: kind, T: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Version: 1})
		ctx := &simCtx{topic: s.cfg.Layout.ShardTriggers(), key: s.shardKeys[0], table: simMapTable{}, ctx: context.Background()}
		require.NoError(t, ctx.run(s.onTrigger, raw))
		require.Len(t, ctx.outs, 1, kind)
		require.Equal(t, string(s.cfg.Layout.Rejects()), ctx.outs[0].Topic)
		r, err := codecs.DecodeReject(ctx.outs[0].Value)
		require.NoError(t, err)
		require.Equal(t, codecs.CodeUnknownOp, r.Code)
		require.Equal(t, raw, r.Value, kind)
		require.NotEmpty(t, r.ValueSHA256)
	}
}
