package heldwrites_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/testenv/brokerfaults"
)

// TestAdversary50SchedulerPutLostBehindRejectedCommand: the whole
// instance. A put of job "a" (input N of chronos-jobs) writes a's record
// to the scheduler table; the broker fails that changelog write
// (NOT_ENOUGH_REPLICAS until sarama's retries are spent). While it is
// retried the scheduler consumes input N+1 on the same partition: an
// invalid command (a tombstone), which the input policy rejects through
// its franz-go producer and commits with a deferred commit once the reject
// is acknowledged, without a record through the processor's (InOrder)
// producer. That commit covers N. The processor stops with N's failure,
// its store is discarded and restored from the changelog, and the
// scheduler goes on after N+1: the put is never applied, job "a" does not
// exist. FAILS while InOrder covers only inputs whose callback sends a
// record through it.
func TestAdversary50SchedulerPutLostBehindRejectedCommand(t *testing.T) {
	env := testenv.New(t, 1)
	if env.Broker == nil {
		t.Skip("needs the embedded broker's request hooks")
	}
	const marker = "adv50poison"
	table := string(env.Layout.SchedulerTable())
	var poison atomic.Bool
	c := env.Broker.Cluster()
	attempts := brokerfaults.FailProduce(c, func(b brokerfaults.Batch) int16 {
		if poison.Load() && b.Topic == table && bytes.Contains(b.Records, []byte(marker)) {
			return kerr.NotEnoughReplicas.Code
		}
		return 0
	})

	inst := env.Start(env.Config())
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	jobs := string(env.Layout.Jobs())
	env.Put("warm", codecs.JobDef{Every: "1h"}, t0)
	env.WaitApplied()

	poison.Store(true)
	def := codecs.JobDef{Every: "1h", Payload: []byte(`{"m":"` + marker + `"}`)}
	res := env.Client.ProduceSync(context.Background(), &kgo.Record{Topic: jobs, Key: []byte("a"), Value: testenv.PutCommand("a", def), Timestamp: t0})
	require.NoError(t, res.FirstErr())
	n := res[0].Record.Offset
	testenv.Eventually(t, 20*time.Second, func() error {
		if attempts.Load() == 0 {
			return errors.New("a's table write not attempted yet")
		}
		return nil
	})
	env.Produce(jobs, "a", nil, t0) // N+1: a tombstone, rejected
	testenv.Eventually(t, 20*time.Second, func() error {
		if attempts.Load() < 11 {
			return fmt.Errorf("%d attempts failed", attempts.Load())
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	committed := adv50Committed(t, env, string(env.Layout.SchedulerGroup()), jobs)
	poison.Store(false)
	env.WaitApplied()
	inst.Stop()

	rec := adv50Table(t, env, table)["a"]
	t.Logf("put of a at %d; committed after the failure: %d; %d table writes failed; a's record: %d bytes", n, committed, attempts.Load(), len(rec))
	require.NotEmptyf(t, rec, "the scheduler committed offset %d past the put of job a (offset %d) whose table write failed, because the "+
		"rejected command after it was committed by its deferred commit (a franz-go reject): the put is lost, job a does not exist", committed, n)
}
