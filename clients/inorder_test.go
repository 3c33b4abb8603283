package clients

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/stretchr/testify/require"
)

// shuffledProducer is a goka producer that keeps every record's finisher;
// the test finishes them in any order.
type shuffledProducer struct {
	mu   sync.Mutex
	fins []goka.PromiseFinisher // by send number
}

func (p *shuffledProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *shuffledProducer) EmitWithHeaders(string, string, []byte, goka.Headers) *goka.Promise {
	pr, fin := goka.NewPromiseWithFinisher()
	p.mu.Lock()
	p.fins = append(p.fins, fin)
	p.mu.Unlock()
	return pr
}

func (p *shuffledProducer) Close() error { return nil }

func (p *shuffledProducer) sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fins)
}

// TestInOrderAgainstModel: records finished by the inner producer in a
// random order, some failing, from several goroutines at once, are
// reported each once, in the order they were sent, and a record is
// reported acknowledged only if it and every record sent before it were;
// once a failure is reported, a new record is failed without being sent.
// Seeded: the seed is in the failure's name.
func TestInOrderAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			inner := &shuffledProducer{}
			p := InOrder(inner)
			n := 1 + rng.IntN(60)
			failAt := map[int]bool{}
			if rng.IntN(3) > 0 {
				for range 1 + rng.IntN(3) {
					failAt[rng.IntN(n)] = true
				}
			}
			var (
				mu       sync.Mutex
				reported []int
				results  = map[int]error{}
			)
			for i := range n {
				p.Emit("t", fmt.Sprint(i), nil).Then(func(err error) {
					mu.Lock()
					defer mu.Unlock()
					reported = append(reported, i)
					results[i] = err
				})
			}
			require.Equal(t, n, inner.sent())

			order := rng.Perm(n)
			workers := 1 + rng.IntN(4)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := w; j < n; j += workers {
						i := order[j]
						var err error
						if failAt[i] {
							err = fmt.Errorf("record %d: broker gone", i)
						}
						inner.fins[i](&sarama.ProducerMessage{Topic: "t"}, err)
						if j%5 == 0 {
							inner.fins[i](&sarama.ProducerMessage{Topic: "t"}, nil) // finished twice: ignored
						}
					}
				}()
			}
			wg.Wait()

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, reported, n, "every record reported once")
			first := -1
			for i := range n {
				require.Equal(t, i, reported[i], "reported in send order")
				if failAt[i] && first < 0 {
					first = i
				}
				switch {
				case first < 0:
					require.NoError(t, results[i], "record %d: it and every earlier one succeeded", i)
				case i == first || failAt[i]:
					require.ErrorContains(t, results[i], "broker gone", "record %d failed itself", i)
				default:
					require.ErrorIs(t, results[i], ErrEarlierWriteFailed, "record %d: record %d failed before it", i, first)
				}
			}

			var after error
			p.Emit("t", "after", nil).Then(func(err error) { after = err })
			if first < 0 {
				require.Equal(t, n+1, inner.sent(), "no failure: the next record is sent")
				return
			}
			require.Equal(t, n, inner.sent(), "after a failure the next record is not sent")
			require.ErrorIs(t, after, ErrEarlierWriteFailed)
		})
	}
}

// TestInOrderReportsARecordSentFromACallback: a record sent from a
// promise's callback (as goka's callbacks may, in the reporting
// goroutine) and finished at once does not deadlock and is reported after
// the records before it.
func TestInOrderReportsARecordSentFromACallback(t *testing.T) {
	inner := &shuffledProducer{}
	p := InOrder(inner)
	var got []string
	p.Emit("t", "a", nil).Then(func(err error) {
		require.NoError(t, err)
		got = append(got, "a")
		p.Emit("t", "c", nil).Then(func(err error) { got = append(got, "c:"+fmt.Sprint(err)) })
		inner.fins[2](nil, errors.New("gone")) // c fails at once
	})
	p.Emit("t", "b", nil).Then(func(err error) { got = append(got, "b:"+fmt.Sprint(err)) })
	inner.fins[1](nil, nil) // b first: held behind a
	require.Empty(t, got)
	inner.fins[0](nil, nil)
	require.Equal(t, []string{"a", "b:<nil>", "c:gone"}, got)
}

// TestInOrderBoundsHeldCommits: behind a record the broker has not
// answered, at most MaxHeldCommits callbacks' commits wait; the next one
// waits for room (or gives up with its context), and gets it once the
// record is answered.
func TestInOrderBoundsHeldCommits(t *testing.T) {
	inner := &shuffledProducer{}
	p := InOrder(inner).(*inOrder)
	p.Emit("t", "head", nil)
	var reported atomic.Int64
	for range MaxHeldCommits {
		require.NoError(t, p.waitRoom(context.Background()))
		promise, _ := p.barrier()
		promise.Then(func(err error) {
			require.NoError(t, err)
			reported.Add(1)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.waitRoom(ctx), context.DeadlineExceeded, "the queue is full behind the head record")

	got := make(chan error, 1)
	go func() { got <- p.waitRoom(context.Background()) }()
	select {
	case err := <-got:
		t.Fatalf("waitRoom returned (%v) while the head record waits", err)
	case <-time.After(50 * time.Millisecond):
	}
	inner.fins[0](nil, nil)
	require.NoError(t, <-got, "room once the head record is answered")
	require.EqualValues(t, MaxHeldCommits, reported.Load())
}

// TestInOrderBoundsHeldBytes: behind a record the broker has not
// answered, the inputs whose commits wait pin at most MaxHeldBytes
// together; the next callback waits for room before it runs, unless
// nothing is held, and runs once the record is answered. A callback whose
// own commit is no longer held does not wait.
func TestInOrderBoundsHeldBytes(t *testing.T) {
	const size = 1 << 20
	inner := &shuffledProducer{}
	p := InOrder(inner).(*inOrder)

	// Nothing waits: an input larger than the bound alone is not held up.
	_, alone := p.barrier()
	p.holdBytes(context.Background(), alone, 2*MaxHeldBytes)
	require.Zero(t, p.heldBytes, "a barrier with nothing before it holds no commit")

	p.Emit("t", "head", nil)
	var reported atomic.Int64
	for range MaxHeldBytes / size {
		promise, b := p.barrier()
		promise.Then(func(err error) {
			require.NoError(t, err)
			reported.Add(1)
		})
		p.holdBytes(context.Background(), b, size)
	}
	require.Equal(t, MaxHeldBytes, p.heldBytes)

	_, next := p.barrier()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p.holdBytes(ctx, next, size) // gives up with its context: held anyway
	require.Equal(t, MaxHeldBytes+size, p.heldBytes, "a cancelled partition's input is held one past the bound")

	_, last := p.barrier()
	got := make(chan struct{})
	go func() {
		p.holdBytes(context.Background(), last, size)
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("an input past MaxHeldBytes ran while the head record waits")
	case <-time.After(50 * time.Millisecond):
	}
	inner.fins[0](nil, nil)
	<-got
	require.EqualValues(t, MaxHeldBytes/size, reported.Load())
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Zero(t, p.heldBytes, "every barrier left: nothing held")
	require.Zero(t, p.held)
}

// TestProcessorInputsHoldBytes: every input edge of a Chronos processor
// counts its bytes while its commit is held (Input, Loop): goka.Input or
// goka.Loop in a processor would pin its inputs by count alone.
func TestProcessorInputsHoldBytes(t *testing.T) {
	var files []string
	require.NoError(t, filepath.WalkDir("../processors", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return err
	}))
	inputs := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, bad := range []string{"goka.Input(", "goka.Inputs(", "goka.Loop("} {
			require.NotContains(t, string(src), bad, "%s: use clients.Input or clients.Loop", f)
		}
		inputs += strings.Count(string(src), "clients.Input(") + strings.Count(string(src), "clients.Loop(")
	}
	require.GreaterOrEqual(t, inputs, 9, "the processors' input edges were not found: did they move?")
}

// inputCtx is a goka context with a key and headers only.
type inputCtx struct {
	gokaContext
	key     string
	headers goka.Headers
}

func (c inputCtx) Key() string           { return c.key }
func (c inputCtx) Headers() goka.Headers { return c.headers }

// TestInputBytesCountsHeaders: what an input pins is its key, value and
// headers (adversary round 53: a record of one 640 KiB header was counted
// as 7 bytes).
func TestInputBytesCountsHeaders(t *testing.T) {
	ctx := inputCtx{key: "job-1", headers: goka.Headers{"trace": make([]byte, 700), "chronos-actor": []byte("ops")}}
	require.Equal(t, len("job-1")+3+len("trace")+700+len("chronos-actor")+3, InputBytes(ctx, []byte("{}x")))
	require.Equal(t, len("job-1"), InputBytes(inputCtx{key: "job-1"}, nil), "a tombstone pins its key")
}
