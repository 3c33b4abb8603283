package processors_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// poison is one record a careless or hostile producer can write.
type poison struct {
	name      string
	topic     string
	partition int32 // -1: the every-second job's partition
	key       []byte
	value     []byte
	code      string // the reject's code
}

// manualClient produces records to the partition each names.
func manualClient(t *testing.T, env *testenv.Env) *kgo.Client {
	cl, err := env.Kafka.NewKgo(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// keyOn returns a key with the prefix that hashes to partition p.
func keyOn(prefix string, p, n int32) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("%s-%d", prefix, i); topology.Partition(k, n) == p {
			return k
		}
	}
}

// watchReady records the first time the instance is not ready.
func watchReady(t *testing.T, ready func() error) func() error {
	var (
		mu    sync.Mutex
		first error
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := ready(); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// TestPoisonRecordsNeverStopScheduling produces poison of every kind to
// every topic a processor consumes, on the partition of an every-second
// job, one record before each second's tick: the job fires every second
// (each tick's fire arrives before the next poison is sent), the instance
// stays ready throughout, nothing poisoned is stored, and each bad record
// has exactly one reject, bounded in size, with its sizes and hash.
func TestPoisonRecordsNeverStopScheduling(t *testing.T) {
	t.Parallel()
	const partitions = 4
	env := testenv.New(t, partitions)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	inst := env.Start(env.Config())
	ready := watchReady(t, inst.Ready)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const job = "every-second"
	p := topology.Partition(job, partitions)
	// In bucket "b", so an accepted bucket trigger would fire it too.
	env.Put(job, codecs.JobDef{Every: "1s", Bucket: "b"}, t0)
	env.WaitApplied()

	rng := rand.New(rand.NewPCG(1, 2))
	junk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	big := 990 << 10
	n := env.Layout.Names
	shardKey, err := topology.ShardKeys(partitions)
	require.NoError(t, err)
	wrongKey := keyOn("misplaced", (p+1)%partitions, partitions)
	hugePut := []byte(`{"v":1,"op":"put","job":{"every":"1s","payload":"` + strings.Repeat("x", big) + `"}}`)
	put := []byte(`{"v":1,"op":"put","job":{"every":"1s"}}`)
	list := []poison{
		{"990 kB junk", string(n.Jobs()), -1, []byte(keyOn("junk", p, partitions)), junk(big), codecs.CodeMalformed},
		{"put with a 990 kB payload", string(n.Jobs()), -1, []byte(keyOn("huge", p, partitions)), hugePut, codecs.CodePayloadTooLarge},
		{"tombstone on the job's key", string(n.Jobs()), -1, []byte(job), nil, codecs.CodeTombstone},
		{"null key", string(n.Jobs()), -1, nil, put, codecs.CodeInvalidID},
		{"binary key", string(n.Jobs()), -1, []byte{0xff, 0x00, 0xfe}, put, codecs.CodeInvalidID},
		{"990 kB key", string(n.Jobs()), -1, junk(big), put, codecs.CodeInvalidID},
		{"put on the wrong partition", string(n.Jobs()), -1, []byte(wrongKey), put, codecs.CodeWrongPartition},
		{"junk shard trigger", string(n.ShardTriggers()), -1, []byte(shardKey[p]), junk(big), codecs.CodeMalformed},
		{"shard trigger tombstone", string(n.ShardTriggers()), -1, []byte(shardKey[p]), nil, codecs.CodeMalformed},
		{"shard trigger with a foreign key", string(n.ShardTriggers()), -1, []byte("intruder"),
			codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t0.Add(time.Hour)}), codecs.CodeInvalidID},
		{"junk loopback", string(n.SchedulerLoop()), -1, []byte(shardKey[p]), junk(big), codecs.CodeMalformed},
		{"junk backfill step", string(n.SchedulerBackfill()), -1, []byte(job), junk(big), codecs.CodeMalformed},
		{"advance on the backfill topic", string(n.SchedulerBackfill()), -1, []byte(shardKey[p]),
			codecs.EncodeInternal(codecs.ShardTrigger{Kind: codecs.KindAdvance, T: t0.Add(time.Hour)}), codecs.CodeUnknownOp},
		{"bucket shard trigger with a 990 kB payload", string(n.ShardTriggers()), -1, []byte(shardKey[p]), codecs.EncodeInternal(codecs.ShardTrigger{
			Kind: codecs.KindBucket, T: t0, Bucket: "b", TriggerID: "x", Payload: []byte(`"` + strings.Repeat("z", big) + `"`)}), codecs.CodePayloadTooLarge},
		{"bucket loopback with a 990 kB payload", string(n.SchedulerLoop()), -1, []byte(shardKey[p]), codecs.EncodeInternal(codecs.ShardTrigger{
			Kind: codecs.KindBucket, T: t0, Bucket: "b", TriggerID: "x", Payload: []byte(`"` + strings.Repeat("z", big) + `"`)}), codecs.CodePayloadTooLarge},
		{"shard trigger without a time", string(n.ShardTriggers()), -1, []byte(shardKey[p]), []byte(`{"kind":"advance"}`), codecs.CodeMalformed},
		{"junk clock tick", string(n.Clock()), 0, []byte(clock.TickKey), junk(big), codecs.CodeMalformed},
		{"clock tombstone", string(n.Clock()), 0, []byte(clock.TickKey), nil, codecs.CodeMalformed},
		{"junk bucket trigger", string(n.BucketTriggers()), -1, []byte("b"), junk(big), codecs.CodeMalformed},
		{"bucket trigger tombstone", string(n.BucketTriggers()), -1, nil, nil, codecs.CodeTombstone},
		{"bucket trigger with a 990 kB payload", string(n.BucketTriggers()), -1, []byte("b"),
			[]byte(`{"v":1,"bucket":"b","payload":"` + strings.Repeat("y", big) + `"}`), codecs.CodePayloadTooLarge},
	}
	cl := manualClient(t, env)
	type where struct {
		topic     string
		partition int32
		offset    int64
	}
	sent := map[where]poison{}
	for i, bad := range list {
		part := bad.partition
		if part < 0 {
			part = p
		}
		r := &kgo.Record{Topic: bad.topic, Partition: part, Key: bad.key, Value: bad.value, Timestamp: t0.Add(time.Duration(i) * time.Second)}
		require.NoError(t, cl.ProduceSync(context.Background(), r).FirstErr(), bad.name)
		sent[where{r.Topic, r.Partition, r.Offset}] = bad
		// The next second's fire must arrive: the poison did not stop
		// the job's partition.
		at := t0.Add(time.Duration(i+1) * time.Second)
		env.Tick(at)
		want := codecs.ScheduledFireID(job, at)
		testenv.Eventually(t, 30*time.Second, func() error {
			for _, d := range dispatch.Dispatches(t) {
				if d.FireID == want {
					return nil
				}
			}
			return fmt.Errorf("after %q: no fire %s", bad.name, want)
		})
	}
	rejects.WaitLen(t, len(list), 60*time.Second)
	seen := map[where]bool{}
	for _, rec := range rejects.Records() {
		require.LessOrEqual(t, len(rec.Value), codecs.MaxRejectBytes)
		rj, err := codecs.DecodeReject(rec.Value)
		require.NoError(t, err)
		w := where{rj.Topic, rj.Partition, rj.Offset}
		bad, ok := sent[w]
		require.True(t, ok, "reject of a record not sent: %+v", rj)
		require.False(t, seen[w], "two rejects for %q", bad.name)
		seen[w] = true
		require.Equal(t, bad.code, rj.Code, "%s: %s", bad.name, rj.Reason)
		require.Equal(t, len(bad.value), rj.ValueSize, bad.name)
		require.Equal(t, len(bad.key), rj.KeySize, bad.name)
		require.True(t, bytes.HasPrefix(bad.value, rj.Value), bad.name)
		require.True(t, bytes.HasPrefix(bad.key, rj.Key), bad.name)
		require.Equal(t, bad.value == nil, rj.Value == nil, bad.name)
		if bad.value != nil {
			sum := sha256.Sum256(bad.value)
			require.Equal(t, hex.EncodeToString(sum[:]), rj.ValueSHA256, bad.name)
		}
		if bad.code == codecs.CodeWrongPartition {
			require.Contains(t, rj.Reason, fmt.Sprintf("belongs on partition %d", topology.Partition(wrongKey, partitions)))
		}
	}
	require.Len(t, seen, len(list), "one reject per poison record")
	require.NoError(t, ready(), "the instance must stay ready")
	// Nothing poisoned was stored or fired: only the job fired, once per second.
	fires := map[string]int{}
	for _, d := range dispatch.Dispatches(t) {
		require.Equal(t, job, d.JobID, "only the valid job fires")
		require.Equal(t, codecs.TriggerSchedule, d.Trigger, "no poisoned trigger fires it: %s", d.FireID)
		fires[d.FireID]++
	}
	for i := 1; i <= len(list); i++ {
		require.Contains(t, fires, codecs.ScheduledFireID(job, t0.Add(time.Duration(i)*time.Second)))
	}
	stored, err := inst.Scheduler().Store(p).Get(wrongKey)
	require.NoError(t, err)
	require.Nil(t, stored, "a put on the wrong partition is not stored")
}

// TestRejectThatCannotBeWrittenIsDroppedAndCounted deletes the rejects
// topic under a running instance: bad records are then counted in
// chronos_inputs_dropped_total and skipped, and the job keeps firing.
func TestRejectThatCannotBeWrittenIsDroppedAndCounted(t *testing.T) {
	t.Parallel()
	const partitions = 2
	env := testenv.New(t, partitions)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	reg := prometheus.NewRegistry()
	cfg := env.Config()
	cfg.Registerer = reg
	inst := env.Start(cfg)
	ready := watchReady(t, inst.Ready)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const job = "every-second"
	p := topology.Partition(job, partitions)
	env.Put(job, codecs.JobDef{Every: "1s"}, t0)
	env.WaitApplied()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kadm.NewClient(env.Client).DeleteTopic(ctx, string(env.Layout.Rejects()))
	require.NoError(t, err)

	const bad = 3
	cl := manualClient(t, env)
	for i := range bad {
		r := &kgo.Record{Topic: string(env.Layout.Jobs()), Partition: p, Key: []byte(job), Value: []byte("junk"), Timestamp: t0}
		require.NoError(t, cl.ProduceSync(context.Background(), r).FirstErr())
		at := t0.Add(time.Duration(i+1) * time.Second)
		env.Tick(at)
		want := codecs.ScheduledFireID(job, at)
		testenv.Eventually(t, 30*time.Second, func() error {
			for _, d := range dispatch.Dispatches(t) {
				if d.FireID == want {
					return nil
				}
			}
			return fmt.Errorf("no fire %s", want)
		})
	}
	testenv.Eventually(t, 120*time.Second, func() error {
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		var dropped float64
		for _, mf := range mfs {
			if mf.GetName() != "chronos_inputs_dropped_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "topic" && l.GetValue() == string(env.Layout.Jobs()) {
						dropped += m.GetCounter().GetValue()
					}
				}
			}
		}
		if dropped != bad {
			return fmt.Errorf("dropped %v of %d", dropped, bad)
		}
		return nil
	})
	require.NoError(t, ready(), "the instance must stay ready")
	// The partition committed past the dropped records.
	env.WaitApplied()
}
