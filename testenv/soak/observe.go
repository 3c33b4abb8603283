package soak

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv/audit"
	"github.com/chronos-scheduler/chronos/topology"
)

// observer reads chronos-dispatch and chronos-rejects from their start.
// Each dispatch event of a soak job is kept with the time this process
// read it (the real clock of the machine every instance shares: an event
// read before its scheduled_at was fired early). Safe for concurrent use.
type observer struct {
	cl       *kgo.Client
	dispatch string
	cancel   context.CancelFunc
	done     chan struct{}

	mu          sync.Mutex
	obs         []audit.Observed
	poisonFires map[string]int // job id -> scheduled fires
	undecodable int            // dispatch records that do not decode
	rejects     int
}

func newObserver(brokers string, names topology.Names) (*observer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(string(names.Dispatch()), string(names.Rejects())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cl: cl, dispatch: string(names.Dispatch()), cancel: cancel, done: make(chan struct{}), poisonFires: map[string]int{}}
	go o.run(ctx)
	return o, nil
}

func (o *observer) run(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		fs := o.cl.PollFetches(ctx)
		now := time.Now()
		o.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) { o.add(r, now) })
		o.mu.Unlock()
	}
}

func (o *observer) add(r *kgo.Record, now time.Time) {
	if r.Topic != o.dispatch {
		o.rejects++
		return
	}
	d, err := codecs.DecodeDispatch(r.Value)
	switch {
	case err != nil:
		o.undecodable++
	case strings.HasPrefix(d.JobID, poisonPrefix):
		o.poisonFires[d.JobID]++
	case strings.HasPrefix(d.JobID, jobPrefix):
		o.obs = append(o.obs, audit.Observed{Dispatch: d, Received: now})
	}
}

// snapshot returns the soak jobs' events so far.
func (o *observer) snapshot() []audit.Observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]audit.Observed(nil), o.obs...)
}

// counts returns the poison jobs' fires, undecodable events and rejects.
func (o *observer) counts() (poisonFires map[string]int, undecodable, rejects int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	pf := make(map[string]int, len(o.poisonFires))
	for k, v := range o.poisonFires {
		pf[k] = v
	}
	return pf, o.undecodable, o.rejects
}

func (o *observer) close() {
	o.cancel()
	<-o.done
	o.cl.Close()
}
