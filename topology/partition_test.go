package topology_test

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/topology"
)

func fnvHash(key string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return h.Sum32()
}

// partitionKeys returns random keys (ASCII, UTF-8 and raw bytes) plus fixed
// edge cases; about half have the high bit of their FNV-1a hash set.
func partitionKeys(t *testing.T) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"", "a", "job-1", "__chronos/shard/0/0", "ä😀", "\x00", "\xff\xfe"}
	for i := 0; i < 4000; i++ {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			switch i % 3 {
			case 0:
				b[j] = byte('a' + rng.IntN(26))
			default:
				b[j] = byte(rng.Uint32())
			}
		}
		keys = append(keys, string(b), "job-"+strconv.Itoa(i))
	}
	neg := 0
	for _, k := range keys {
		if int32(fnvHash(k)) < 0 {
			neg++
		}
	}
	require.Greater(t, neg, len(keys)/3, "want many keys whose hash has the high bit set")
	return keys
}

func TestPartitionMatchesSaramaAndFranz(t *testing.T) {
	t.Parallel()
	keys := partitionKeys(t)
	sp := sarama.NewCustomHashPartitioner(fnv.New32a)("chronos-jobs")
	require.True(t, sp.RequiresConsistency())
	kp := topology.Partitioner().ForTopic("chronos-jobs")
	for _, n := range []int32{1, 2, 3, 7, 12, 64, 1000} {
		seen := make(map[int32]bool)
		for _, k := range keys {
			got := topology.Partition(k, n)
			require.True(t, got >= 0 && got < n, "Partition(%q, %d) = %d", k, n, got)
			want, err := sp.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(k)}, n)
			require.NoError(t, err)
			require.Equal(t, want, got, "sarama: key %q (hash %#x), n=%d", k, fnvHash(k), n)
			require.Equal(t, int(got), kp.Partition(&kgo.Record{Key: []byte(k)}, int(n)), "franz-go: key %q, n=%d", k, n)
			seen[got] = true
		}
		if n <= 64 {
			require.Len(t, seen, int(n), "every partition is used")
		}
	}
}

func TestPartitionKnownValues(t *testing.T) {
	t.Parallel()
	// FNV-1a 32 of "" is 0x811c9dc5: negative as int32 (-2128831035).
	require.Equal(t, uint32(0x811c9dc5), fnvHash(""))
	require.Equal(t, int32(2128831035%12), topology.Partition("", 12))
	require.Equal(t, int32(0), topology.Partition("anything", 1))
}

func TestShardKeys(t *testing.T) {
	t.Parallel()
	for _, n := range []int32{1, 2, 3, 12, 64, 257} {
		keys, err := topology.ShardKeys(n)
		require.NoError(t, err)
		require.Len(t, keys, int(n))
		again, err := topology.ShardKeys(n)
		require.NoError(t, err)
		require.Equal(t, keys, again, "deterministic")
		uniq := make(map[string]bool)
		for p, k := range keys {
			require.True(t, strings.HasPrefix(k, topology.ShardKeyPrefix+"shard/"+strconv.Itoa(p)+"/"), k)
			require.Equal(t, int32(p), topology.Partition(k, n), "key %q", k)
			require.Equal(t, p, topology.Partitioner().ForTopic("x").Partition(&kgo.Record{Key: []byte(k)}, int(n)))
			uniq[k] = true
		}
		require.Len(t, uniq, int(n))
	}
	keys, err := topology.ShardKeys(1)
	require.NoError(t, err)
	require.Equal(t, []string{"__chronos/shard/0/0"}, keys)
	for _, n := range []int32{0, -1, -1 << 31} {
		keys, err := topology.ShardKeys(n)
		require.Error(t, err, "n=%d", n)
		require.Nil(t, keys)
	}
}
