package clients

// Adversary round 50: InOrder's own promises (order, exactly once, sticky
// failure), its liveness and its memory.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
)

// adv50Inner is a goka producer the test drives: each record's finisher is
// kept (by send number); with sync set, EmitWithHeaders finishes the
// record itself before returning (a producer that fails at once, e.g. a
// closed or already failed one), with the error fail returns for it.
type adv50Inner struct {
	mu    sync.Mutex
	fins  map[int]goka.PromiseFinisher
	sync  bool
	fail  func(n int) error
	sends atomic.Int64
}

func (p *adv50Inner) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *adv50Inner) EmitWithHeaders(topic, key string, value []byte, _ goka.Headers) *goka.Promise {
	pr, fin := goka.NewPromiseWithFinisher()
	p.mu.Lock()
	n := int(p.sends.Load())
	if p.fins == nil {
		p.fins = map[int]goka.PromiseFinisher{}
	}
	if !p.sync {
		p.fins[n] = fin
	}
	p.sends.Add(1)
	p.mu.Unlock()
	if p.sync {
		var err error
		if p.fail != nil {
			err = p.fail(n)
		}
		fin(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}, err)
	}
	return pr
}

func (p *adv50Inner) Close() error { return nil }

// fin takes record i's finisher (the inner producer forgets it).
func (p *adv50Inner) fin(i int) goka.PromiseFinisher {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fins[i]
	delete(p.fins, i)
	return f
}

// TestAdversary50RecordSentAfterFailureReportedBeforeEarlierOnes: a
// record sent once a failure has been decided is failed at once, in the
// sending goroutine, while records sent before it (after the failed one)
// are still waiting for the inner producer: it is reported before them.
// InOrder's first promise ("records are reported in the order they were
// sent") does not hold on this path. Harmless for commits (every one of
// them fails), but a caller that relies on the order (e.g. counting the
// reports to know how far it got) is misled. FAILS while the sticky path
// reports out of order.
func TestAdversary50RecordSentAfterFailureReportedBeforeEarlierOnes(t *testing.T) {
	inner := &adv50Inner{}
	p := InOrder(inner)
	var mu sync.Mutex
	var order []string
	report := func(name string) func(error) {
		return func(err error) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
		}
	}
	p.Emit("t", "a", nil).Then(report("a"))
	p.Emit("t", "b", nil).Then(report("b"))
	inner.fin(0)(nil, errors.New("a: broker gone")) // a fails; b still in flight
	p.Emit("t", "c", nil).Then(report("c"))         // sent after b
	inner.fin(1)(&sarama.ProducerMessage{}, nil)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"a", "b", "c"}, order, "records are reported in the order they were sent")
}

// TestAdversary50ConcurrentSendsAndFinishes: many goroutines send at once
// (as goka's partitions do through one producer), the inner producer
// finishes records from other goroutines in random order and some
// synchronously inside the send, a few fail, and some promise callbacks
// send again. Every record is reported exactly once; each goroutine's
// records in its send order; once a failure is reported, every later
// report is a failure; a record is never reported acknowledged if the
// inner producer failed it; nothing is left inside InOrder. Run with -race.
func TestAdversary50ConcurrentSendsAndFinishes(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 50))
			const senders, each = 8, 200
			inner := &adv50Inner{}
			failAt := -1
			if seed%2 == 1 {
				failAt = rng.IntN(senders * each)
			}
			innerErr := func(n int) error {
				if n == failAt {
					return fmt.Errorf("record %d: broker gone", n)
				}
				return nil
			}
			p := InOrder(inner).(*inOrder)

			type rep struct {
				sender, i int
				err       error
				late      bool // reported when its callback was attached: finished before
			}
			var (
				mu      sync.Mutex
				reports []rep
				seen    = map[[2]int]int{}
				nested  atomic.Int64
			)
			record := func(sender, i int, attaching *atomic.Bool) func(error) {
				return func(err error) {
					mu.Lock()
					reports = append(reports, rep{sender, i, err, attaching.Load()})
					seen[[2]int{sender, i}]++
					mu.Unlock()
					if i%50 == 7 {
						// a callback that sends again, in the reporting goroutine
						nested.Add(1)
						p.Emit("t", "nested", nil).Then(func(error) { nested.Add(-1) })
					}
				}
			}

			// finisher goroutines: finish whatever is sent, in random order
			stop := make(chan struct{})
			var fwg sync.WaitGroup
			finished := make([]atomic.Bool, 1<<16)
			for w := range 4 {
				fwg.Add(1)
				go func() {
					defer fwg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(w)))
					for {
						select {
						case <-stop:
							return
						default:
						}
						n := int(inner.sends.Load())
						if n == 0 {
							runtime.Gosched()
							continue
						}
						i := r.IntN(n)
						if finished[i].CompareAndSwap(false, true) {
							inner.fin(i)(&sarama.ProducerMessage{Topic: "t"}, innerErr(i))
						}
					}
				}()
			}
			var swg sync.WaitGroup
			for s := range senders {
				swg.Add(1)
				go func() {
					defer swg.Done()
					for i := range each {
						// A promise finished before Then is attached (by a
						// finisher goroutine while Emit returns, as goka's
						// own Emit(...).Then may be) runs its callback in
						// Then, here: its report is observed late, and was
						// decided in order before.
						var attaching atomic.Bool
						attaching.Store(true)
						p.Emit("t", fmt.Sprint(s, "/", i), nil).Then(record(s, i, &attaching))
						attaching.Store(false)
					}
				}()
			}
			swg.Wait()
			// finish everything left, in order
			deadline := time.Now().Add(30 * time.Second)
			for {
				n := int(inner.sends.Load())
				for i := range n {
					if finished[i].CompareAndSwap(false, true) {
						inner.fin(i)(&sarama.ProducerMessage{Topic: "t"}, innerErr(i))
					}
				}
				mu.Lock()
				got := len(reports)
				mu.Unlock()
				if got == senders*each && nested.Load() == 0 && int(inner.sends.Load()) == n {
					break
				}
				require.False(t, time.Now().After(deadline), "records never reported: %d of %d, %d nested pending", got, senders*each, nested.Load())
				time.Sleep(time.Millisecond)
			}
			close(stop)
			fwg.Wait()

			mu.Lock()
			defer mu.Unlock()
			for s := range senders {
				for i := range each {
					require.Equal(t, 1, seen[[2]int{s, i}], "sender %d record %d reported once", s, i)
				}
			}
			// The failed record's own report (the inner producer failed
			// it) comes after every record reported acknowledged, and no
			// record is acknowledged after it: promise 2, which the
			// sticky path's early reports (see
			// TestAdversary50RecordSentAfterFailureReportedBeforeEarlierOnes)
			// cannot confuse. Per sender, the send order holds among
			// records reported before any failure; after one, reports
			// sent on the sticky path may overtake (counted, logged).
			last := map[int]int{}
			failedSeen, firstOwn, overtaken := false, -1, 0
			for k, r := range reports {
				if r.err != nil && !errors.Is(r.err, ErrEarlierWriteFailed) {
					firstOwn = k
				}
				if r.err == nil && !r.late {
					require.Less(t, firstOwn, 0, "record %d/%d reported acknowledged after the failed record's report", r.sender, r.i)
				}
				if prev, ok := last[r.sender]; ok && prev > r.i {
					require.True(t, failedSeen, "sender %d: record %d reported after %d with no failure before", r.sender, r.i, prev)
					overtaken++
				}
				last[r.sender] = max(last[r.sender], r.i)
				failedSeen = failedSeen || r.err != nil
			}
			if overtaken > 0 {
				t.Logf("%d reports overtook an earlier record of their sender after the failure (the sticky path)", overtaken)
			}
			require.Equal(t, failAt >= 0, failedSeen)
			p.mu.Lock()
			defer p.mu.Unlock()
			require.Empty(t, p.sent)
			require.Empty(t, p.ready)
			require.False(t, p.delivering)
		})
	}
}

// TestAdversary50SynchronousInnerNoDeadlockNoRecursion: an inner producer
// that finishes each record inside the send, and callbacks that send
// again from the report (a chain of 100,000), neither deadlock nor grow
// the stack: reports of records sent from a report are queued for the
// delivering goroutine.
func TestAdversary50SynchronousInnerNoDeadlockNoRecursion(t *testing.T) {
	inner := &adv50Inner{sync: true}
	p := InOrder(inner)
	const chain = 100000
	var got atomic.Int64
	var next func(i int)
	next = func(i int) {
		p.Emit("t", "k", nil).Then(func(err error) {
			require.NoError(t, err)
			got.Add(1)
			if i+1 < chain {
				next(i + 1)
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		next(0)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("deadlock: the chain of sends from reports did not finish")
	}
	require.EqualValues(t, chain, got.Load())
}

// TestAdversary50StickyFailureChainTerminates: after a failure, a callback
// that sends again from its (failed) report gets its own failure at once,
// in the same goroutine; a retry loop of 10,000 such sends ends (no
// deadlock on InOrder's lock) and never reaches the inner producer.
func TestAdversary50StickyFailureChainTerminates(t *testing.T) {
	inner := &adv50Inner{}
	p := InOrder(inner)
	p.Emit("t", "a", nil)
	inner.fin(0)(nil, errors.New("gone"))
	n := 0
	var retry func()
	retry = func() {
		p.Emit("t", "again", nil).Then(func(err error) {
			require.ErrorIs(t, err, ErrEarlierWriteFailed)
			if n++; n < 10000 {
				retry()
			}
		})
	}
	retry()
	require.Equal(t, 10000, n)
	require.EqualValues(t, 1, inner.sends.Load(), "nothing sent after the failure")
}

// TestAdversary50SlidingWindowMemory: 2,000,000 records through InOrder
// with always some (up to 256) in flight, finished out of order inside the
// window: sent never empties, so its backing array is only ever resliced
// and grown by append. Its capacity stays a multiple of the window
// and the heap does not grow with the number of records.
func TestAdversary50SlidingWindowMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("2M records")
	}
	inner := &adv50Inner{}
	p := InOrder(inner).(*inOrder)
	const total, window = 2_000_000, 256
	rng := rand.New(rand.NewPCG(50, 50))
	var reported atomic.Int64
	pending := make([]int, 0, window)
	var before runtime.MemStats
	maxCap := 0
	for i := range total {
		p.Emit("t", "k", nil).Then(func(err error) {
			if err != nil {
				panic(err)
			}
			reported.Add(1)
		})
		pending = append(pending, i)
		if len(pending) == window {
			// finish a random one of the window, never the oldest alone
			j := rng.IntN(len(pending))
			inner.fin(pending[j])(&sarama.ProducerMessage{}, nil)
			pending[j] = pending[len(pending)-1]
			pending = pending[:len(pending)-1]
		}
		if i%65536 == 0 {
			p.mu.Lock()
			maxCap = max(maxCap, cap(p.sent))
			p.mu.Unlock()
		}
		if i == 100_000 {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
	}
	p.mu.Lock()
	inflight := len(p.sent)
	p.mu.Unlock()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("in flight %d (window %d), sent's max capacity %d, heap grew %d MB, %d reported",
		inflight, window, maxCap, grew>>20, reported.Load())
	require.LessOrEqual(t, maxCap, 64*window, "sent's backing array stays a multiple of what is in flight (records finished behind the oldest pending one included)")
	require.Less(t, grew, int64(64<<20), "InOrder's memory does not grow with the records sent")
	for _, j := range pending {
		inner.fin(j)(&sarama.ProducerMessage{}, nil)
	}
	require.EqualValues(t, total, reported.Load())
}

// TestAdversary50StalledHeadRetainsAcknowledgedValues: while the oldest
// record waits (its partition's leader is gone: sarama retries it for up
// to Retry.Max x (Producer.Timeout + backoff)), every later record of
// every partition of the processor is acknowledged by the broker and
// released by sarama, but InOrder keeps it, with its
// *sarama.ProducerMessage and so its value, until the head is decided.
// goka does not wait for acknowledgements to consume further, and nothing
// in InOrder pushes back: the memory held grows with the processor's
// throughput times the head's delay. goka's callback only needs the
// message's Offset (setValueForKey); keeping the value is what this test
// measures. FAILS while acknowledged records keep their values.
func TestAdversary50StalledHeadRetainsAcknowledgedValues(t *testing.T) {
	inner := &adv50Inner{}
	p := InOrder(inner)
	p.Emit("t", "head", nil) // never finished
	const n, size = 20_000, 4 << 10
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		v := make([]byte, size)
		v[0] = byte(i)
		p.Emit("t", "k", v)
		inner.fin(i+1)(&sarama.ProducerMessage{Topic: "t", Value: sarama.ByteEncoder(v)}, nil) // acknowledged, sarama lets go
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d acknowledged records of %d bytes behind a waiting head: %d MB held (%d bytes a record)", n, size, held>>20, held/n)
	require.Less(t, held/n, int64(1024), "an acknowledged record behind a waiting head should cost InOrder its bookkeeping, not its value")
	runtime.KeepAlive(p)
}
