package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv/audit"
	"github.com/chronos-scheduler/chronos/topology"
)

// Grace is the misfire grace of every soak job: longer than any outage the
// faults cause, so every fire in the window is owed (the audit runs without
// advances) and a late fire is still a fire.
const Grace = "10m"

// jobPrefix starts the id of every audited job; poisonPrefix every id the
// poison records use (their fires are counted apart).
const (
	jobPrefix    = "soak-"
	poisonPrefix = "poison-"
)

// loader produces the load to chronos-jobs and remembers every job whose
// put was acknowledged. Safe for concurrent use.
type loader struct {
	cl         *kgo.Client
	topic      string
	partitions int32

	mu   sync.Mutex
	jobs []audit.Job
}

func newLoader(brokers string, names topology.Names, partitions int32) (*loader, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &loader{cl: cl, topic: string(names.Jobs()), partitions: partitions}, nil
}

func putValue(id string, def codecs.JobDef) []byte {
	b, err := codecs.EncodeCommand(codecs.CommandMsg{Op: codecs.OpPut, ID: id, Job: &def})
	if err != nil {
		panic(fmt.Sprintf("soak: encoding a put of %q: %v", id, err)) // a JobDef always encodes
	}
	return b
}

// record is a record of key on its documented partition.
func (l *loader) record(key string, value []byte, ts time.Time) *kgo.Record {
	return &kgo.Record{Topic: l.topic, Key: []byte(key), Value: value, Timestamp: ts,
		Partition: topology.Partition(key, l.partitions)}
}

// putRecurring puts the recurring jobs of load and waits for the acks.
func (l *loader) putRecurring(ctx context.Context, load Load) (time.Time, error) {
	putAt := time.Now()
	var recs []*kgo.Record
	var jobs []audit.Job
	add := func(n int, every string) {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("%se%s-%05d", jobPrefix, every, i)
			def := codecs.JobDef{Every: every, MisfireGrace: Grace, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
			recs = append(recs, l.record(id, putValue(id, def), putAt))
			jobs = append(jobs, audit.Job{ID: id, Def: def, PutAt: putAt})
		}
	}
	add(load.Every1s, "1s")
	add(load.Every5s, "5s")
	add(load.Every10s, "10s")
	if err := l.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return putAt, fmt.Errorf("soak: putting %d jobs: %w", len(recs), err)
	}
	l.mu.Lock()
	l.jobs = append(l.jobs, jobs...)
	l.mu.Unlock()
	return putAt, nil
}

// oneShots puts perSecond one-shot jobs every second, each due 3-40 s
// later, until ctx ends. Only acknowledged puts are remembered.
func (l *loader) oneShots(ctx context.Context, perSecond int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	n := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		for i := 0; i < perSecond; i++ {
			id := fmt.Sprintf("%sat-%07d", jobPrefix, n)
			n++
			at := now.Add(3*time.Second + time.Duration(rng.IntN(37000))*time.Millisecond).UTC().Truncate(time.Millisecond)
			def := codecs.JobDef{At: at.Format(time.RFC3339Nano), MisfireGrace: Grace, Payload: json.RawMessage(fmt.Sprintf(`{"at":%d}`, n))}
			job := audit.Job{ID: id, Def: def, PutAt: now}
			l.cl.Produce(ctx, l.record(id, putValue(id, def), now), func(_ *kgo.Record, err error) {
				if err == nil {
					l.mu.Lock()
					l.jobs = append(l.jobs, job)
					l.mu.Unlock()
				}
			})
		}
	}
}

// all returns the acknowledged jobs so far.
func (l *loader) all() []audit.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]audit.Job(nil), l.jobs...)
}

func (l *loader) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = l.cl.Flush(ctx)
	l.cl.Close()
}
