package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var codecs = map[string]kgo.CompressionCodec{
	"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// TestBrokerRefusesCompressionBombs produces generated batches with every
// codec, each a record of zeros (a few kB compressed) either comfortably
// under Kafka's max.message.bytes once inflated or anywhere up to 64 MiB
// over it: the first kind is stored and read back, the second refused with
// MESSAGE_TOO_LARGE and never stored. Good batches sent in the same request
// as a bomb still land.
func TestBrokerRefusesCompressionBombs(t *testing.T) {
	b, err := Start(Options{Partitions: 2})
	require.NoError(t, err)
	defer b.Close()
	rng := rand.New(rand.NewPCG(18, 1))
	stored := map[string]int{}
	for name, codec := range codecs {
		topic := "bombs-" + name
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ProducerBatchCompression(codec),
			kgo.ProducerBatchMaxBytes(128<<20), kgo.BrokerMaxWriteBytes(256<<20), kgo.AllowAutoTopicCreation(),
			kgo.ProducerLinger(50*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		for i := range 6 {
			bomb := rng.IntN(2) == 0
			size := rng.IntN(DefaultMaxInflatedBatchBytes - 4096)
			if bomb {
				size = DefaultMaxInflatedBatchBytes + 1 + rng.IntN(64<<20)
			}
			// A small good record on the other partition, in the same request.
			good := &kgo.Record{Topic: topic, Partition: 1, Value: []byte(fmt.Sprintf("good %d", i))}
			r := &kgo.Record{Topic: topic, Partition: 0, Value: make([]byte, size)}
			res := cl.ProduceSync(context.Background(), r, good)
			require.NoError(t, res[1].Err, "%s: the good batch beside it lands", name)
			stored[topic+"/1"]++
			if bomb {
				require.True(t, errors.Is(res[0].Err, kerr.MessageTooLarge), "%s: a %d-byte bomb: %v", name, size, res[0].Err)
				continue
			}
			require.NoError(t, res[0].Err, "%s: %d bytes inflated is under the limit", name, size)
			stored[topic+"/0"]++
		}
		cl.Close()
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	require.NoError(t, err)
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(context.Background())
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic[:6] == "bombs-" {
			require.EqualValues(t, stored[fmt.Sprintf("%s/%d", o.Topic, o.Partition)], o.Offset, "records stored on %s/%d", o.Topic, o.Partition)
		}
	})
}
