package processors_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv"
	"github.com/chronos-scheduler/chronos/topology"
)

// adv11Codes are the reject codes docs/topics.md ("Reject records")
// documents; a reject with any other code breaks the contract.
var adv11Codes = map[string]bool{
	codecs.CodeMalformed: true, codecs.CodeTombstone: true, codecs.CodeUnknownVersion: true,
	codecs.CodeUnknownOp: true, codecs.CodeUnknownField: true, codecs.CodeInvalidID: true,
	codecs.CodeReservedID: true, codecs.CodeWrongPartition: true, codecs.CodeInvalidSchedule: true,
	codecs.CodeInvalidField: true, codecs.CodePayloadTooLarge: true, codecs.CodeUnknownJob: true,
	codecs.CodeVersionConflict: true, codecs.CodeInvalidTimestamp: true,
}

// adv11Timestamps are record timestamps a producer can set. Kafka takes
// any 64-bit millisecond count (Apache Kafka's default timestamp bounds
// are unlimited): years past 9999, which RFC 3339 and Go's JSON cannot
// write, the largest one, -1 (Kafka's "no timestamp") and times before
// year 1.
func adv11Timestamps(t0 time.Time) []int64 {
	return []int64{
		t0.UnixMilli(),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		math.MaxInt64,
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		-1,
		math.MinInt64 / 2,
	}
}

// adv11Poison generates bad records for the input topics with a seeded
// generator. Every generated record is invalid (its reject is expected);
// p is the every-second job's partition.
type adv11Poison struct {
	rng        *rand.Rand
	names      topology.Names
	partitions int32
	p          int32
	shardKey   string
	t0         time.Time
	n          int
}

func (g *adv11Poison) junk(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

// command returns an invalid chronos-jobs value and a key for it, on the
// job's partition (each record gets a key of its own, so none of them is
// the job's and none is stored under a key a later one uses).
func (g *adv11Poison) command() ([]byte, []byte) {
	g.n++
	key := []byte(keyOn(fmt.Sprintf("adv11-%d", g.n), g.p, g.partitions))
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	values := []string{
		string(g.junk(g.rng.IntN(3000))),
		``,
		`{}`,
		`null`,
		`[]`,
		`{"v":"1","op":"put","job":{"every":"1s"}}`,
		`{"v":1e999,"op":"put","job":{"every":"1s"}}`,
		`{"v":1,"op":"put","job":{"every":"1s"},"job":{"every":"2s"}}`,
		`{"v":1,"op":"put","job":{"Cron":"* * * * *"}}`,
		`{"V":1,"op":"put","job":{"every":"1s"}}`,
		`{"v":1,"op":"put","job":{"every":"1s","payload":` + deep + `}}`,
		`{"v":1,"op":"put","job":{"cron":"* * * * *","tz":"../../etc/passwd"}}`,
		`{"v":1,"op":"put","job":{"at":"0001-01-01T00:00:00Z"}}`,
		`{"v":1,"op":"put","job":{"every":"1s","start":"10000-01-01T00:00:00Z"}}`,
		`{"v":1,"op":"put","job":{"every":"1s","bucket":"b\u0007"}}`,
		`{"v":1,"op":"put","job":{"every":"1s","unknown":true}}`,
		`{"v":1,"op":"put","id":"someone-else","job":{"every":"1s"}}`,
		`{"v":1,"op":"put","id":"` + "\xff" + `","job":{"every":"1s"}}`,
		// Payloads must be JSON, and JSON text is UTF-8 (RFC 8259 8.1):
		// invalid UTF-8 in a string would reach every consumer.
		`{"v":1,"op":"put","job":{"every":"1s","payload":"` + "\xff\xfe" + `"}}`,
		`{"v":1,"op":"put","job":{"every":"1s","payload":{"` + "\xc0\xaf" + `":1}}}`,
		`{"v":1,"op":"fire","trigger_id":"m-1-2"}`,
		`{"v":1,"op":"pause","trigger_id":"x"}`,
		`{"v":1,"op":"put","job":{"every":"1s","payload":1e999999}}` + "garbage",
		`{"v":1,"op":"put","job":{"every":"1s","payload":{"a":1,"a":2}}}`,
		`{"v":1,"op":"put","if_version":-1,"job":{"every":"1s"}}`,
		`{"v":1,"op":"put","if_version":18446744073709551616,"job":{"every":"1s"}}`,
	}
	return key, []byte(values[g.rng.IntN(len(values))])
}

// bucketTrigger returns an invalid chronos-bucket-triggers value.
func (g *adv11Poison) bucketTrigger() []byte {
	values := []string{
		string(g.junk(g.rng.IntN(3000))),
		`{"v":1}`,
		`{"v":1,"bucket":"b","bucket":"b"}`,
		`{"v":1,"Bucket":"b"}`,
		`{"v":1,"bucket":"..","trigger_id":"x"}`,
		`{"v":1,"bucket":"b","trigger_id":"2026-01-01T00:00:00Z"}`,
		`{"v":1,"bucket":"b","payload":"` + "\xff" + `"}`,
	}
	return []byte(values[g.rng.IntN(len(values))])
}

// internal returns an invalid record for an internal topic: topic, key, value.
func (g *adv11Poison) internal() (string, []byte, []byte) {
	switch g.rng.IntN(3) {
	case 0:
		values := []string{string(g.junk(g.rng.IntN(3000))), `{"kind":"advance"}`, `{"kind":"nope","t":"2026-01-01T00:00:00Z"}`,
			`{"kind":"bucket","t":"2026-01-01T00:00:00Z","bucket":"b"}`, `{"kind":"advance","t":"10000-01-01T00:00:00Z"}`}
		return string(g.names.ShardTriggers()), []byte(g.shardKey), []byte(values[g.rng.IntN(len(values))])
	case 1:
		return string(g.names.SchedulerLoop()), []byte(g.shardKey), g.junk(1 + g.rng.IntN(3000))
	default:
		values := []string{string(g.junk(g.rng.IntN(3000))), `{"t":"junk"}`, `{}`, `{"t":"10000-01-01T00:00:00Z"}`}
		return string(g.names.Clock()), []byte(clock.TickKey), []byte(values[g.rng.IntN(len(values))])
	}
}

// TestAdv11GeneratedPoisonWithAnyTimestamp produces seeded, generated bad
// records (junk, wrong types, huge numbers, deep nesting, duplicate and
// wrong-case keys, unknown fields, invalid UTF-8 in ids and payloads, bad
// time zones and times, reserved trigger ids) to every topic a processor
// consumes, each with a record timestamp a producer may set: far beyond
// year 9999, the largest Kafka allows, -1, before year 1. Promise
// (issue 11, docs/topics.md "Input policy"): any record the broker accepts
// ends as an applied command or as one bounded reject; one record never
// stops a partition; an every-second job keeps firing on time; /readyz
// stays 200. On main a reject of a record stamped after 9999 panicked in
// codecs.EncodeReject (Go's JSON cannot write that year), which failed the
// partition again at every restart, and a payload of invalid UTF-8 was
// stored and sent to every consumer.
func TestAdv11GeneratedPoisonWithAnyTimestamp(t *testing.T) {
	t.Parallel()
	const partitions = 4
	env := testenv.New(t, partitions)
	adv11RaiseTimestampLimits(t, env)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	inst := env.Start(env.Config())
	ready := watchReady(t, inst.Ready)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	const job = "every-second"
	p := topology.Partition(job, partitions)
	env.Put(job, codecs.JobDef{Every: "1s", Bucket: "b"}, t0)
	env.WaitApplied()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	shardKeys, err := topology.ShardKeys(partitions)
	require.NoError(t, err)
	g := &adv11Poison{rng: rand.New(rand.NewPCG(seed, 11)), names: env.Layout.Names, partitions: partitions, p: p,
		shardKey: shardKeys[p], t0: t0}
	stamps := adv11Timestamps(t0)
	raw := adv11RawClient(t, env)
	type where struct {
		topic     string
		partition int32
		offset    int64
	}
	type sentRec struct {
		what       string
		key, value []byte
	}
	sent := map[where]sentRec{}
	var stored []string
	const rounds = 30
	for i := range rounds {
		var topic string
		var key, value []byte
		part := p
		switch g.rng.IntN(4) {
		case 0, 1:
			topic = string(env.Layout.Jobs())
			key, value = g.command()
			stored = append(stored, string(key))
		case 2:
			topic, key, value = string(env.Layout.BucketTriggers()), []byte("b"), g.bucketTrigger()
		default:
			topic, key, value = g.internal()
			if topic == string(env.Layout.Clock()) {
				part = 0
			}
		}
		ts := stamps[g.rng.IntN(len(stamps))]
		if value != nil && len(value) == 0 && g.rng.IntN(2) == 0 {
			value = nil // a tombstone
		}
		offset, err := adv11RawProduce(t, raw, topic, part, key, value, ts)
		if errors.Is(err, kerr.InvalidTimestamp) {
			t.Logf("round %d: the broker refused timestamp %d: not an input", i, ts)
			continue
		}
		require.NoError(t, err, "round %d", i)
		what := fmt.Sprintf("round %d: %s ts=%d key=%q value=%.80q", i, topic, ts, key, value)
		sent[where{topic, part, offset}] = sentRec{what, key, value}
		// The next second's fire must arrive on time (at its tick): the
		// poison did not stop the job's partition.
		at := t0.Add(time.Duration(i+1) * time.Second)
		env.Tick(at)
		want := codecs.ScheduledFireID(job, at)
		testenv.Eventually(t, 30*time.Second, func() error {
			for _, d := range dispatch.Dispatches(t) {
				if d.FireID == want {
					return nil
				}
			}
			return fmt.Errorf("after %s: no fire %s", what, want)
		})
	}
	rejects.WaitLen(t, len(sent), 60*time.Second)
	seen := map[where]bool{}
	for _, rec := range rejects.Records() {
		require.LessOrEqual(t, len(rec.Value), codecs.MaxRejectBytes)
		rj, err := codecs.DecodeReject(rec.Value)
		require.NoError(t, err, "reject %s", rec.Value)
		w := where{rj.Topic, rj.Partition, rj.Offset}
		s, ok := sent[w]
		require.True(t, ok, "reject of a record not sent: %+v", rj)
		require.False(t, seen[w], "two rejects for %s", s.what)
		seen[w] = true
		require.True(t, adv11Codes[rj.Code], "%s: undocumented code %q", s.what, rj.Code)
		require.Equal(t, len(s.value), rj.ValueSize, s.what)
		require.True(t, bytes.HasPrefix(s.value, rj.Value), s.what)
		require.True(t, bytes.HasPrefix(s.key, rj.Key), s.what)
		if s.value != nil {
			sum := sha256.Sum256(s.value)
			require.Equal(t, hex.EncodeToString(sum[:]), rj.ValueSHA256, s.what)
		}
	}
	for w, s := range sent {
		require.True(t, seen[w], "no reject for %s", s.what)
	}
	require.NoError(t, ready(), "the instance must stay ready")
	for _, d := range dispatch.Dispatches(t) {
		require.Equal(t, job, d.JobID, "only the valid job fires")
		require.Equal(t, codecs.TriggerSchedule, d.Trigger, "no poisoned trigger fires it: %s", d.FireID)
	}
	for _, k := range stored {
		v, err := inst.Scheduler().Store(p).Get(k)
		require.NoError(t, err)
		require.Nil(t, v, "poison stored under %q", k)
	}
}

// adv11RaiseTimestampLimits lets the input topics take any record
// timestamp: Apache Kafka 4 refuses timestamps more than an hour ahead by
// default (message.timestamp.after.max.ms), Kafka 3 and topics configured
// so take any. kfake does not keep such timestamps anyway.
func adv11RaiseTimestampLimits(t *testing.T, env *testenv.Env) {
	n := env.Layout.Names
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := "9223372036854775807"
	var alters []kadm.AlterConfig
	for _, k := range []string{"message.timestamp.after.max.ms", "message.timestamp.before.max.ms"} {
		alters = append(alters, kadm.AlterConfig{Name: k, Value: &v})
	}
	res, err := kadm.NewClient(env.Client).AlterTopicConfigs(ctx, alters, string(n.Jobs()), string(n.BucketTriggers()),
		string(n.ShardTriggers()), string(n.SchedulerLoop()), string(n.Clock()))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	t.Logf("raising the topics' timestamp limits: %v", err)
}

// TestAdv11BucketTriggerWithUnusableTimestamp produces valid bucket
// triggers without a timestamp (-1, which the consumer reads as the zero
// time) and stamped in year 12000 (as a Java producer can, on a topic that
// takes any timestamp: Kafka 3's default). Promise
// (issue 11, docs/topics.md "Input policy"): a record ends applied or as
// one reject of its own, and one record never stops a partition. On main
// the router copied the zero time into the shard trigger, which every
// shard then rejected as malformed (one reject per partition, for records
// nobody sent, and none for the trigger); a year after 9999 made its JSON
// encoding panic, so the router group failed at every restart and /readyz
// answered 503. Now each is rejected once, on chronos-bucket-triggers, with
// code invalid_timestamp, and the next trigger fires the bucket.
func TestAdv11BucketTriggerWithUnusableTimestamp(t *testing.T) {
	t.Parallel()
	const partitions = 2
	env := testenv.New(t, partitions)
	adv11RaiseTimestampLimits(t, env)
	dispatch := env.Collect(string(env.Layout.Dispatch()))
	rejects := env.Collect(string(env.Layout.Rejects()))
	inst := env.Start(env.Config())
	ready := watchReady(t, inst.Ready)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	env.Put("member", codecs.JobDef{Every: "24h", Bucket: "b"}, t0)
	env.WaitApplied()
	cl := manualClient(t, env)
	bt := string(env.Layout.BucketTriggers())
	raw := adv11RawClient(t, env)
	noTime := &kgo.Record{Topic: bt, Partition: 0, Key: []byte("b"), Value: []byte(`{"v":1,"bucket":"b","trigger_id":"no-time"}`),
		Timestamp: time.UnixMilli(-1)}
	require.NoError(t, cl.ProduceSync(context.Background(), noTime).FirstErr())
	late, err := adv11RawProduce(t, raw, bt, 0, []byte("b"), []byte(`{"v":1,"bucket":"b","trigger_id":"after-9999"}`),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	require.NoError(t, err)
	ok := &kgo.Record{Topic: bt, Partition: 0, Key: []byte("b"), Value: []byte(`{"v":1,"bucket":"b","trigger_id":"good"}`),
		Timestamp: t0.Add(time.Second)}
	require.NoError(t, cl.ProduceSync(context.Background(), ok).FirstErr())
	testenv.Eventually(t, 30*time.Second, func() error {
		for _, d := range dispatch.Dispatches(t) {
			if d.FireID == codecs.TriggeredFireID("member", "good") {
				return nil
			}
		}
		return fmt.Errorf("the trigger after the bad ones did not fire the bucket")
	})
	env.WaitConsumed(string(env.Layout.SchedulerGroup()), string(env.Layout.ShardTriggers()), 30*time.Second)
	for _, d := range dispatch.Dispatches(t) {
		require.NotEqual(t, codecs.TriggeredFireID("member", "no-time"), d.FireID, "a trigger without a time fired")
		require.NotEqual(t, codecs.TriggeredFireID("member", "after-9999"), d.FireID, "a trigger after 9999 fired")
	}
	want := map[int64]bool{noTime.Offset: true, late: true}
	testenv.Eventually(t, 30*time.Second, func() error {
		got := map[int64]bool{}
		for _, rec := range rejects.Records() {
			rj, err := codecs.DecodeReject(rec.Value)
			if err != nil {
				return err
			}
			if rj.Topic != bt || rj.Code != codecs.CodeInvalidTimestamp {
				return fmt.Errorf("unexpected reject %s on %s: %s", rj.Code, rj.Topic, rj.Reason)
			}
			if got[rj.Offset] {
				return fmt.Errorf("two rejects of offset %d", rj.Offset)
			}
			got[rj.Offset] = true
		}
		if len(got) != len(want) {
			return fmt.Errorf("rejects of offsets %v, want %v", got, want)
		}
		for o := range want {
			if !got[o] {
				return fmt.Errorf("no reject of offset %d", o)
			}
		}
		return nil
	})
	require.NoError(t, ready(), "the instance must stay ready")
}

// adv11RawClient is a client for adv11RawProduce: it speaks produce
// versions that name topics (v13 on name them by id).
func adv11RawClient(t *testing.T, env *testenv.Env) *kgo.Client {
	cl, err := env.Kafka.NewKgo(kgo.MaxVersions(kversion.V3_6_0()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// adv11RawProduce writes one record with the millisecond timestamp ts as
// is, in a record batch of its own, and returns its offset. kgo (like
// sarama) computes batch timestamps through UnixNano, which overflows
// after 2262, so it cannot send what a Java or librdkafka producer can.
func adv11RawProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, key, value []byte, ts int64) (int64, error) {
	t.Helper()
	rec := kmsg.Record{Key: key, Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the rest of the record, after its 1-byte length 0
	if key == nil {
		rec.Key = nil
	}
	batch := kmsg.RecordBatch{Magic: 2, FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	b := batch.AppendTo(nil)
	batch.Length = int32(len(b) - 12) // after FirstOffset and Length
	b = batch.AppendTo(nil)
	batch.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))) // from Attributes on
	b = batch.AppendTo(nil)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	leader := topics[topic].Partitions[partition].Leader
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = partition, b
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	return p.BaseOffset, kerr.ErrorForCode(p.ErrorCode)
}
