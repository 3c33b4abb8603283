// Package inputs is the input policy every Chronos processor applies to the
// records it consumes: a record either ends as an applied command or as a
// reject on chronos-rejects that always fits (a bounded sample of the
// record, see codecs.RejectOf); when even the reject cannot be produced
// (the topic is missing, the producer is denied, the broker refuses it),
// the record is counted in chronos_inputs_dropped_total{topic,reason},
// logged with its partition and offset, and skipped after bounded retries.
// One record never stops a partition.
package inputs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
)

// Defaults of Policy.
const (
	DefaultAttempts       = 3
	DefaultAttemptTimeout = 5 * time.Second
)

// MaxRejectsInFlight and MaxRejectBytesInFlight bound the rejects a
// Policy with a Producer is writing at once for one group, and so the
// input records their deferred commits hold (clients.InputBytes: key,
// value, headers). A Reject past either waits, in its callback, for one
// of its group's rejects to end, as long as the rejects topic works: it
// drops its input at once (DropBacklog: counted, logged and committed
// without a reject) when the group's last reject to end was dropped (the
// topic is missing, denied or refuses it), or once none of its group's
// rejects has begun or ended for RejectStall (one produce attempt's
// timeout: the topic does not answer).
//
// Without the bound a slow rejects topic let every group consume on and
// hold what it rejected (adversary round 53: 160 oversized commands of
// 640 KiB, 100.7 MiB held within 4 s, one goroutine each). The bound is
// per group: with one bound for all, 2,500 bad records on chronos-results,
// rejected by the history group while chronos-rejects was missing,
// delayed the scheduler's fires behind one bad command by 9.9 s (round
// 54). Dropping at the bound without waiting lost 68 of 20,000 rejects of
// a burst on a working topic (round 54), and waiting only 1 s lost 1,976
// of 3,000 on a topic answering in 1.2 s (round 55).
const (
	MaxRejectsInFlight     = 1024
	MaxRejectBytesInFlight = 16 << 20
	RejectStall            = DefaultAttemptTimeout
)

// Drop reasons, the reason label of chronos_inputs_dropped_total.
const (
	DropTopicMissing = "rejects_topic_missing" // the rejects topic does not exist
	DropDenied       = "rejects_denied"        // the producer may not write the rejects topic
	DropTooLarge     = "reject_too_large"      // the broker refused the reject's size
	DropFailed       = "reject_failed"         // any other produce error, after every attempt
	DropBacklog      = "rejects_backlog"       // MaxRejectsInFlight or MaxRejectBytesInFlight of the group were being written while the rejects topic did not take them
)

// Producer produces one record and waits for its acknowledgement.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Policy decides the fate of records that cannot be applied. Its zero value
// is not usable; set Rejects. Safe for concurrent use by every partition of
// every group.
type Policy struct {
	// Rejects is the rejects topic (required).
	Rejects goka.Stream
	// Producer writes rejects, outside goka (nil: goka's ctx.Emit, which
	// fails the partition when the reject cannot be written; only for
	// tests without a client).
	Producer Producer
	// Attempts is how often a reject is tried before the record is
	// dropped (default 3); AttemptTimeout bounds one try (default 5s).
	Attempts       int
	AttemptTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Metrics (nil: none).
	Metrics *Metrics

	mu      sync.Mutex
	budgets map[goka.Group]*rejectBudget
}

// rejectBudget is one group's rejects in flight. Guarded by Policy.mu.
type rejectBudget struct {
	inflight int           // rejects being written
	bytes    int           // the input bytes their commits hold
	active   time.Time     // when one last began or ended
	dropped  bool          // the last to end was dropped
	room     chan struct{} // closed (and replaced) when one ends
}

// Metrics are the input policy's Prometheus metrics. A nil *Metrics records
// nothing. Safe for concurrent use.
type Metrics struct {
	dropped *prometheus.CounterVec
}

// NewMetrics creates the input metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_inputs_dropped_total",
		Help: "Consumed records that could be neither applied nor rejected (the reject could not be produced), by input topic and reason."},
		[]string{"topic", "reason"})}
	reg.MustRegister(m.dropped)
	return m
}

func (m *Metrics) drop(topic, reason string) {
	if m != nil {
		m.dropped.WithLabelValues(topic, reason).Inc()
	}
}

// Reject writes the current record of ctx to the rejects topic with the
// reason err (a *codecs.Error for a stable code), and returns the reject's
// code. raw is the record's value (nil for a null value). With a Producer
// the reject is produced asynchronously; the record's offset is committed
// only once the reject is acknowledged or, after Attempts tries, dropped
// and counted, so the partition goes on in any case. Past
// MaxRejectsInFlight or MaxRejectBytesInFlight of its group it waits for
// room while the rejects topic works, and is dropped and counted
// (DropBacklog) when it does not (see MaxRejectsInFlight); a dropped
// record is committed as its callback ends.
func (p *Policy) Reject(ctx goka.Context, raw []byte, err error) string {
	key := []byte(ctx.Key())
	r := codecs.RejectOf(err, string(ctx.Topic()), ctx.Partition(), ctx.Offset(), key, raw, ctx.Timestamp())
	log := p.logger()
	log.Warn("rejected input", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "code", r.Code, "field", r.Field, "reason", r.Reason)
	value := codecs.EncodeReject(r)
	// The reject's key is the original key's sample: same partition number
	// for keys up to the sample size, bounded for any key.
	rkey := r.Key
	if p.Producer == nil {
		ctx.Emit(p.Rejects, string(rkey), value)
		return r.Code
	}
	held, group := clients.InputBytes(ctx, raw), ctx.Group()
	if !p.admit(ctx.Context(), group, held) {
		p.Metrics.drop(r.Topic, DropBacklog)
		log.Error("dropped input: too many rejects are being written", "topic", r.Topic, "partition", r.Partition,
			"offset", r.Offset, "code", r.Code, "drop_reason", DropBacklog,
			"in_flight_limit", MaxRejectsInFlight, "in_flight_bytes_limit", MaxRejectBytesInFlight)
		return r.Code
	}
	done := ctx.DeferCommit()
	rec := &kgo.Record{Topic: string(p.Rejects), Key: rkey, Value: value}
	go func() {
		reason, err := p.produce(rec)
		if err != nil {
			p.Metrics.drop(r.Topic, reason)
			log.Error("dropped input: its reject could not be produced", "topic", r.Topic, "partition", r.Partition,
				"offset", r.Offset, "code", r.Code, "drop_reason", reason, "err", err)
		}
		done(nil)
		p.release(group, held, err != nil)
	}()
	return r.Code
}

// admit counts a reject of an input of n bytes in flight for group once
// its rejects in flight leave room for it (MaxRejectsInFlight,
// MaxRejectBytesInFlight), or none is, or ctx is done (its partition is
// going away: one past the bound), and reports true. It reports false,
// counting nothing, if the group's last reject to end was dropped, or
// once none has begun or ended for RejectStall while it waits.
func (p *Policy) admit(ctx context.Context, group goka.Group, n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.budgets == nil {
		p.budgets = map[goka.Group]*rejectBudget{}
	}
	b := p.budgets[group]
	if b == nil {
		b = &rejectBudget{}
		p.budgets[group] = b
	}
	for b.inflight > 0 && (b.inflight >= MaxRejectsInFlight || b.bytes+n > MaxRejectBytesInFlight) {
		wait := RejectStall - time.Since(b.active)
		if b.dropped || wait <= 0 {
			return false
		}
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-room:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.mu.Lock()
			b.inflight, b.bytes = b.inflight+1, b.bytes+n
			return true
		}
		t.Stop()
		p.mu.Lock()
	}
	b.inflight, b.bytes, b.active = b.inflight+1, b.bytes+n, time.Now()
	return true
}

// release ends a reject of group's of an input of n bytes, dropped or
// written.
func (p *Policy) release(group goka.Group, n int, dropped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.budgets[group]
	b.inflight, b.bytes, b.active, b.dropped = b.inflight-1, b.bytes-n, time.Now(), dropped
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
}

// produce tries rec up to Attempts times; on failure it returns the drop
// reason and the last error.
func (p *Policy) produce(rec *kgo.Record) (string, error) {
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	timeout := p.AttemptTimeout
	if timeout <= 0 {
		timeout = DefaultAttemptTimeout
	}
	var err error
	for i := range attempts {
		if i > 0 {
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		r := *rec // a record may be produced only once at a time
		err = p.Producer.ProduceSync(ctx, &r).FirstErr()
		cancel()
		if err == nil {
			return "", nil
		}
		if reason, final := DropReason(err); final {
			return reason, err
		}
	}
	reason, _ := DropReason(err)
	return reason, err
}

// DropReason classifies a produce error of a reject; final is true when
// trying again cannot help.
func DropReason(err error) (reason string, final bool) {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return DropTopicMissing, false
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return DropDenied, true
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return DropTooLarge, true
	}
	return DropFailed, false
}

func (p *Policy) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}
