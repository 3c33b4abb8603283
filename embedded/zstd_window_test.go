// The zstd window a produced batch may declare costs the embedded broker
// one decoder's window, not one per batch (adversary 18e, issue 18).
//
// Run: go test -count=1 -v -run TestZstdWindowCostsTheBrokerOnce ./embedded/

package embedded

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigWindowZstd is a valid zstd frame holding data in one raw block whose
// header declares an 8 MiB window (maxZstdWindow, the largest the guard
// accepts) and no content size: what any encoder may legally write.
func bigWindowZstd(data []byte) []byte {
	f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68} // magic; FHD 0; window 2^(10+13): 8 MiB, the largest the guard accepts
	hdr := uint32(1) | uint32(len(data))<<3         // last block, raw
	f = binary.LittleEndian.AppendUint32(f, hdr)[:len(f)+3]
	return append(f, data...)
}

// TestZstdWindowCostsTheBrokerOnce (adversary 18e's
// TestAdversary18eZstdWindowCostsTheBrokerPerBatch, fixed: the window is
// capped at 8 MiB and the decoders are pooled): the promise
// (docs/configuration.md and docs/security.md: the embedded broker bounds
// what a produced compressed batch costs it at Kafka's max.message.bytes,
// inflate "never holds more than limit+1 bytes of output"; issue 18: no
// valid input can exhaust memory or CPU). The guard inflates a zstd batch
// with zstd.NewReader(WithDecoderMaxWindow(64 MiB)), and the decoder
// allocates the frame's declared window up front: a valid 90-byte batch
// (one small record, frame header declaring a 64 MiB window, no content
// size) makes the broker allocate 64 MiB, whatever the 1 MiB limit. One
// produce request repeating such a batch for the same partition makes the
// broker's single request loop allocate 64 MiB per ~87 wire bytes before
// anything is stored. Measured: a request of 8,717 bytes (100 batches of
// 79 bytes) allocated 6,426 MiB (773,013x the wire, 80-100 GCs) and held
// the request loop 407-889 ms; another client's metadata request sent 50 ms
// in waited 837 ms for it (kfake serves every request in one loop, where
// the guard runs). By the same figures a 1 MiB request (~12,000
// batches, under the 100 MiB frame cap) is ~811 GB and ~50 s during which
// every client of `chronos dev` (every processor, the API's writes) waits.
func TestZstdWindowCostsTheBrokerOnce(t *testing.T) {
	const entries = 100
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	plain := "uncompressed"
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &plain}, "w")
	require.NoError(t, err)
	td, err := kadm.NewClient(cl).ListTopics(ctx, "w")
	require.NoError(t, err)

	batch := batchOf(4, 1, bigWindowZstd(encodeRecords([]genRecord{{key: []byte("k"), value: []byte("v")}})))
	// Control: the batch alone is valid and stored.
	send := func(n int) (int16, int) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 600_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "w", td["w"].ID
		for range n {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		wire := len(req.AppendTo(nil))
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].ErrorCode, wire
	}
	code, _ := send(1)
	require.Zero(t, code, "the big-window batch is valid and stored")

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	// Another client's metadata request, sent while the big request is
	// being checked, waits for the broker's one request loop.
	other, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	require.NoError(t, err)
	defer other.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, other) // connected
	require.NoError(t, err)
	waited := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		time.Sleep(50 * time.Millisecond)
		s := time.Now()
		_, _ = kmsg.NewPtrMetadataRequest().RequestWith(ctx, other)
		waited <- time.Since(s)
	}()
	_, wire := send(entries)
	took := time.Since(start)
	t.Logf("another client's metadata request sent meanwhile waited %v", (<-waited).Round(time.Millisecond))
	runtime.ReadMemStats(&m1)
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("one produce request of %d bytes (%d batches of %d bytes): broker allocated %.0f MiB (%.0f MiB per batch, %.0fx the wire), request loop busy %v, %d GCs; a 1 MiB request: ~%.0f GB",
		wire, entries, len(batch), float64(alloc)/(1<<20), float64(alloc)/entries/(1<<20), float64(alloc)/float64(wire), took.Round(time.Millisecond), m1.NumGC-m0.NumGC,
		float64(alloc)/float64(wire)*(1<<20)/1e9)
	require.LessOrEqual(t, alloc/entries, uint64(2*DefaultMaxInflatedBatchBytes),
		"a valid compressed batch costs the embedded broker more than its inflate limit (Kafka's max.message.bytes)")
}
