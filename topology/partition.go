package topology

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ShardKeyPrefix starts every shard-trigger key. Job ids may not start with it.
const ShardKeyPrefix = "__chronos/"

// Partition returns the partition goka assigns key to among n partitions:
// FNV-1a 32 through sarama's hash partitioner (int32(hash) % n, negated if
// negative).
func Partition(key string, n int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	p := int32(h.Sum32()) % n
	if p < 0 {
		p = -p
	}
	return p
}

// Partitioner returns a franz-go partitioner that places keys exactly where
// goka's consumers expect them (see Partition).
func Partitioner() kgo.Partitioner {
	return kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a))
}

func fnv32a(b []byte) uint32 {
	h := fnv.New32a()
	_, _ = h.Write(b)
	return h.Sum32()
}

// ShardKeys returns, for each of n partitions, the key that goka's hasher maps
// to that partition: "__chronos/shard/<p>/<i>" for the smallest i that works.
// The table entry under that key holds the shard's watermark.
func ShardKeys(n int32) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("topology: partition count %d, want >= 1", n)
	}
	keys := make([]string, n)
	for p := int32(0); p < n; p++ {
		for i := 0; ; i++ {
			k := ShardKeyPrefix + "shard/" + strconv.Itoa(int(p)) + "/" + strconv.Itoa(i)
			if Partition(k, n) == p {
				keys[p] = k
				break
			}
		}
	}
	return keys, nil
}
