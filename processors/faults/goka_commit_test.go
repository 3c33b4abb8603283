package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/testenv"
)

// TestWithheldCommitSurvivesCancel checks the goka mechanism the scheduler
// relies on when a fan-out fails while its partition is being revoked: a
// deferred commit completed with an error keeps the input uncommitted even
// after goka's context is cancelled (where ctx.Fail alone would not; see
// TestClockGokaCommitsAFailedCallbackAfterCancel).
func TestWithheldCommitSurvivesCancel(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 1)
	topic := env.Layout.ShardTriggers()
	group := goka.Group(env.Layout.Prefix + "probe-withheld")
	entered := make(chan struct{}, 1)
	graph := goka.DefineGroup(group, goka.Input(topic, new(codec.Bytes), func(ctx goka.Context, _ any) {
		entered <- struct{}{}
		<-ctx.Context().Done()
		err := errors.New("producing dispatch events: context canceled")
		ctx.DeferCommit()(err) // what scheduler.failed does
		ctx.Fail(err)
	}))
	p, err := goka.NewProcessor(env.Kafka.Brokers, graph, env.Kafka.GokaProcessorOptions()...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.Eventually(t, 60*time.Second, func() error {
		env.Produce(string(topic), "k", []byte("advance"), time.Now())
		select {
		case <-entered:
			return nil
		case <-time.After(500 * time.Millisecond):
			return errors.New("callback not called yet")
		}
	})
	cancel()
	<-done
	offs, err := kadm.NewClient(env.Client).FetchOffsets(context.Background(), string(group))
	if err == nil {
		o, ok := offs.Lookup(string(topic), 0)
		require.False(t, ok && o.At > 0, "the failed input was committed (offset %d)", o.At)
	}
}
