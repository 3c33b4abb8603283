package store

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestBloomFiltersChangeNoRead applies generated sets and deletes, over
// many flushes and compactions (a 256 KiB memtable), to a store with Bloom
// filters and compares every read, of present and missing keys, with a map;
// (and that the filters answered reads); then reopens the same files with the filters off and on again (tables
// written with and without filters mixed), and reads everything again.
func TestBloomFiltersChangeNoRead(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	rng := rand.New(rand.NewPCG(7, 13))
	model := map[string]string{}
	key := func() string { return "job-" + strconv.Itoa(rng.IntN(20_000)) }
	check := func(s *Store) {
		for i := range 25_000 {
			k := "job-" + strconv.Itoa(i)
			v, err := s.Get(k)
			require.NoError(t, err)
			want, ok := model[k]
			if !ok {
				require.Nil(t, v, "key %s", k)
				continue
			}
			require.Equal(t, want, string(v), "key %s", k)
		}
	}
	for round, bits := range []int{10, 0, 10, 3} {
		s := New("/bloom", Options{FS: fs, BloomBitsPerKey: bits, CacheSize: 1 << 20, MemTableSize: 256 << 10})
		require.NoError(t, s.Open())
		for i := range 20_000 {
			k := key()
			switch rng.IntN(8) {
			case 0:
				require.NoError(t, s.Delete(k))
				delete(model, k)
			case 1:
				v, err := s.Get(k)
				require.NoError(t, err)
				if want, ok := model[k]; ok {
					require.Equal(t, want, string(v))
				} else {
					require.Nil(t, v)
				}
			default:
				v := strconv.Itoa(round) + ":" + strconv.Itoa(i) + ":" + string(make([]byte, rng.IntN(300)))
				require.NoError(t, s.Set(k, []byte(v)))
				model[k] = v
			}
		}
		check(s)
		if round == 0 {
			// The filters are there and used: reads skipped tables.
			require.Positive(t, s.db.Metrics().Filter.Hits, "no read was answered by a filter")
		}
		require.NoError(t, s.Close())
	}
	s := New("/bloom", Options{FS: fs, BloomBitsPerKey: 10})
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	check(s)
}
