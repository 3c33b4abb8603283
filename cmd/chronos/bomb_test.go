package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// TestCompressionBombOnJobsNeverReachesChronos writes to chronos-jobs and
// chronos-bucket-triggers a zstd batch of a few kB holding 48 MiB of zeros:
// far under the broker's 1 MB limit as sent (issue 18; before the fix goka's
// sarama consumer inflated a 256 MiB one whole, 550 MiB of RSS, and a bigger
// one killed the instance on every restart). The promises: "No single
// record, of any size or shape the broker accepts, can stop a partition" and
// "memory is sized from documented settings, never from the shape of one
// input" (docs/security.md). Now the broker refuses the batch (Chronos
// creates these topics with compression.type=uncompressed; the embedded
// broker applies the same rule), the job beside it keeps firing and
// `chronos run` stays under its budget. The bomb is 48 MiB so that Apache
// Kafka's 512 MiB test broker can inflate it to refuse it.
func TestCompressionBombOnJobsNeverReachesChronos(t *testing.T) {
	const bomb = 48 << 20
	tenv := testenv.New(t, 2)
	pid, done, exitErr := startRunProcess(t, tenv, nil, "GOMEMLIMIT=off")
	const job = "beat"
	tenv.Put(job, codecs.JobDef{Every: "1s"}, time.Now())
	waitFireAfter(t, tenv, job, time.Now(), done)

	cl, err := kgo.NewClient(kgo.SeedBrokers(tenv.Kafka.Brokers...), kgo.RecordPartitioner(topology.Partitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(bomb+1<<20), kgo.BrokerMaxWriteBytes(1<<30))
	require.NoError(t, err)
	defer cl.Close()
	key := job
	for i := 0; key == job || topology.Partition(key, tenv.Layout.Partitions) != topology.Partition(job, tenv.Layout.Partitions); i++ {
		key = fmt.Sprintf("bomb-%d", i)
	}
	for _, topic := range []string{string(tenv.Layout.Jobs()), string(tenv.Layout.BucketTriggers())} {
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: make([]byte, bomb)}
		err := cl.ProduceSync(context.Background(), r).FirstErr()
		require.True(t, errors.Is(err, kerr.MessageTooLarge), "the broker refuses the bomb on %s: %v", topic, err)
	}
	sent := time.Now()

	// The job's partition goes on: a fire scheduled after the bomb was sent.
	waitFireAfter(t, tenv, job, sent.Add(2*time.Second), done)
	hwm := vmHWM(t, pid)
	t.Logf("peak RSS of chronos run after a %d MiB compression bomb was sent to chronos-jobs: %.1f MiB (budget %d MiB)", bomb>>20, float64(hwm)/(1<<20), memoryBudget>>20)
	require.Less(t, hwm, int64(memoryBudget), "peak RSS over the budget")
	select {
	case <-done:
		t.Fatalf("chronos run exited: %v", *exitErr)
	default:
	}
}

// waitFireAfter waits up to 2 minutes (or until stop is closed) for a
// scheduled fire of job at or after at on chronos-dispatch.
func waitFireAfter(t *testing.T, tenv *testenv.Env, job string, at time.Time, stop <-chan struct{}) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tenv.Kafka.Brokers...), kgo.ConsumeTopics(string(tenv.Layout.Dispatch())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		found := false
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			d, err := codecs.DecodeDispatch(r.Value)
			if err == nil && d.JobID == job && !d.ScheduledAt.Before(at) {
				found = true
			}
		})
		if found {
			return
		}
	}
	select {
	case <-stop:
		t.Fatalf("chronos run exited before a fire of %s at or after %s", job, at.Format(time.RFC3339))
	default:
	}
	t.Fatalf("no fire of %s at or after %s within 2 minutes: its partition is stuck", job, at.Format(time.RFC3339))
}
