// Package testenv gives tests a Kafka broker (the embedded one, or a real
// cluster named by CHRONOS_TEST_BROKERS), a unique topic prefix per test,
// helpers to produce commands and ticks (a simulated clock), and collectors
// for dispatch events and rejects.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/processors/clock"
	"github.com/chronos-scheduler/chronos/testenv/timebound"
	"github.com/chronos-scheduler/chronos/topology"
)

// BrokersEnv names the environment variable that points tests at a real cluster.
const BrokersEnv = "CHRONOS_TEST_BROKERS"

// Env is one test's Kafka environment.
type Env struct {
	T       testing.TB
	Layout  topology.Layout
	Kafka   clients.Config
	Client  *kgo.Client
	Broker  *embedded.Broker // nil on a real cluster
	DataDir string
}

// New returns an environment with its own topic prefix and partitions.
// Everything it starts is stopped by t.Cleanup.
func New(t testing.TB, partitions int32) *Env {
	t.Helper()
	if env := os.Getenv(BrokersEnv); env != "" {
		return NewOn(t, partitions, strings.Split(env, ","))
	}
	b, err := embedded.Start(embedded.Options{Partitions: partitions})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	e := NewOn(t, partitions, b.Addrs())
	e.Broker = b
	return e
}

// NewOn returns an environment on brokers the test manages itself (for
// example an embedded broker with a data dir that the test restarts).
func NewOn(t testing.TB, partitions int32, brokers []string) *Env {
	t.Helper()
	e := &Env{T: t, DataDir: t.TempDir()}
	e.Layout = topology.Layout{Names: topology.Names{Prefix: "t" + randHex(6) + "."}, Partitions: partitions, Replication: 1}
	e.Kafka = clients.Default(brokers...)
	cl, err := e.Kafka.NewKgo()
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	e.Client = cl
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Layout.Ensure(ctx, kadm.NewClient(cl)))
	return e
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// logLevel is CHRONOS_TEST_LOG (debug, info, warn, error; default warn).
func logLevel() slog.Level {
	var l slog.Level = slog.LevelWarn
	_ = l.UnmarshalText([]byte(os.Getenv("CHRONOS_TEST_LOG")))
	return l
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Config returns an instance configuration on this environment, without a
// ticker (the test drives time with Tick) and with its own data dir.
func (e *Env) Config() instance.Config {
	return instance.Config{Kafka: e.Kafka, Layout: e.Layout, DataDir: e.T.TempDir(), Clock: instance.Clock{NoTicker: true},
		Store:  instance.Store{RecoveryL0CompactionThreshold: instance.DefaultRecoveryL0CompactionThreshold},
		Logger: slog.New(slog.NewTextHandler(testWriter{e.T}, &slog.HandlerOptions{Level: logLevel()}))}
}

// Instance is a running Chronos instance of a test.
type Instance struct {
	*instance.Instance
	stop func()
}

// Stop stops the instance and waits for it (a clean shutdown). Idempotent.
func (i *Instance) Stop() { i.stop() }

// Start runs an instance until the test ends (or Stop) and waits until it
// is ready. If Run fails (a fatal store error), the test fails with Run's
// error, not with a timeout.
func (e *Env) Start(cfg instance.Config) *Instance {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sys, err := instance.New(ctx, cfg)
	require.NoError(e.T, err)
	go func() { _ = sys.Run(ctx) }()
	var once sync.Once
	inst := &Instance{Instance: sys, stop: func() {
		once.Do(func() {
			cancel()
			<-sys.Stopped()
		})
	}}
	e.T.Cleanup(func() {
		// Run returns nil when cancelled: an error is a failure of its own.
		if err := sys.Err(); err != nil {
			e.T.Errorf("testenv: the instance stopped: %v", err)
		}
		inst.Stop()
	})
	ready, cancelReady := context.WithTimeout(ctx, timebound.Scaled(60*time.Second))
	defer cancelReady()
	require.NoError(e.T, sys.WaitReady(ready))
	return inst
}

// Produce writes one record with the given timestamp and waits for the ack.
func (e *Env) Produce(topic, key string, value []byte, ts time.Time) {
	e.T.Helper()
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Timestamp: ts}
	require.NoError(e.T, e.Client.ProduceSync(context.Background(), r).FirstErr())
}

// ProduceFuture writes one record stamped ts, far ahead of the broker's
// clock, and skips the test when the broker refuses it: Apache Kafka
// refuses a record stamped more than its message.timestamp.after.max.ms
// ahead (INVALID_TIMESTAMP), so there the input a test makes cannot exist;
// the embedded broker takes it.
func (e *Env) ProduceFuture(topic, key string, value []byte, ts time.Time) {
	e.T.Helper()
	err := e.Client.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Timestamp: ts}).FirstErr()
	if errors.Is(err, kerr.InvalidTimestamp) {
		e.T.Skipf("the broker refuses a record stamped %s (%v): this input cannot be made on it", ts.Format(time.RFC3339), err)
	}
	require.NoError(e.T, err)
}

// ProduceMany writes records with one timestamp and waits for all acks.
func (e *Env) ProduceMany(topic string, keys []string, values [][]byte, ts time.Time) {
	e.T.Helper()
	recs := make([]*kgo.Record, len(keys))
	for i := range keys {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(keys[i]), Value: values[i], Timestamp: ts}
	}
	require.NoError(e.T, e.Client.ProduceSync(context.Background(), recs...).FirstErr())
}

// PutCommand encodes a put command.
func PutCommand(id string, def codecs.JobDef) []byte {
	b, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpPut, ID: id, Job: &def})
	if err != nil {
		panic(err)
	}
	return b
}

// Put registers a job as if at time ts.
func (e *Env) Put(id string, def codecs.JobDef, ts time.Time) {
	e.Produce(string(e.Layout.Jobs()), id, PutCommand(id, def), ts)
}

// Tick sends a clock tick for t (the simulated clock).
func (e *Env) Tick(t time.Time) {
	e.Produce(string(e.Layout.Clock()), clock.TickKey, codecs.EncodeInternal(codecs.Tick{Time: t, Instance: "test"}), t)
}

// Collector consumes a topic from the beginning in the background.
type Collector struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

// Collect starts consuming topic from its beginning until the test ends.
func (e *Env) Collect(topic string) *Collector {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Kafka.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(e.T, err)
	c := &Collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			c.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { c.recs = append(c.recs, r) })
			c.mu.Unlock()
		}
	}()
	e.T.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return c
}

// Records returns a copy of what has arrived so far.
func (c *Collector) Records() []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*kgo.Record(nil), c.recs...)
}

// Commands returns the records of a collector on chronos-jobs that are job
// commands: what has arrived so far without the bulk operations' barriers
// (keyed by a shard key, topology.ShardKeyPrefix).
func (c *Collector) Commands() []*kgo.Record {
	var out []*kgo.Record
	for _, r := range c.Records() {
		if !strings.HasPrefix(string(r.Key), topology.ShardKeyPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// Len returns how many records have arrived.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}

// Dispatches decodes every collected record as a dispatch event.
func (c *Collector) Dispatches(t testing.TB) []codecs.Dispatch {
	t.Helper()
	var out []codecs.Dispatch
	for _, r := range c.Records() {
		d, err := codecs.DecodeDispatch(r.Value)
		require.NoError(t, err, "dispatch %s", r.Value)
		require.Equal(t, d.JobID, string(r.Key), "dispatch key must be the job id")
		out = append(out, d)
	}
	return out
}

// WaitLen waits until at least n records arrived.
func (c *Collector) WaitLen(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() error {
		if got := c.Len(); got < n {
			return fmt.Errorf("have %d records, want %d", got, n)
		}
		return nil
	})
}

// FreeAddr returns a loopback address that was free a moment ago (for an
// instance's HTTP API).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free address: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("free address: %v", err)
	}
	return addr
}

// Eventually polls f until it returns nil or the timeout passes; the
// timeout is timebound.Scaled (10 times as long under the race detector).
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	eventually(t, timebound.Scaled(timeout), f)
}

// eventually is Eventually with the timeout as given.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitConsumed waits until group has committed everything produced so far
// to topic (lag 0 on every partition, measured as the lag package and
// chronos bench measure it), e.g. until every put is applied. The timeout
// is timebound.Scaled.
func (e *Env) WaitConsumed(group, topic string, timeout time.Duration) {
	e.T.Helper()
	e.waitConsumed(group, topic, timebound.Scaled(timeout))
}

// waitConsumed is WaitConsumed with the timeout as given.
func (e *Env) waitConsumed(group, topic string, timeout time.Duration) {
	e.T.Helper()
	adm := kadm.NewClient(e.Client)
	eventually(e.T, timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		parts, err := lag.Measure(ctx, adm, lag.Earliest, lag.Target{Group: group, Topic: topic})
		if err != nil {
			return err
		}
		if n := lag.Sum(parts); n > 0 {
			return fmt.Errorf("group %s lags %d on %s", group, n, topic)
		}
		return nil
	})
}

// WaitApplied waits until the scheduler has applied every command produced so far.
func (e *Env) WaitApplied() {
	// Three minutes: 20,000 puts of 1 KB payloads (TestAdv19f*) took more
	// than 60 s under -race beside the other packages on 2 cores (a CI run on
	// 2026-12-03 was 333 short at 60 s); 10 minutes under the race detector,
	// not timebound's 30, which is go test's limit for the whole package.
	e.waitConsumed(string(e.Layout.SchedulerGroup()), string(e.Layout.Jobs()), max(3*time.Minute, timebound.Scaled(time.Minute)))
}
