package store

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPrefixKeysOracle sets random keys over a small alphabet (so prefixes
// share bytes, including 0x00 and 0xff) and pages through PrefixKeys for
// random prefixes and page sizes: the pages, joined, are exactly the keys
// with the prefix, in order, as a brute-force filter finds them.
func TestPrefixKeysOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 6))
	s := newMemStore(t, Options{Indexer: testIndexer})
	alphabet := []string{"a", "b", "\x00", "\xff", "/"}
	word := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	var all []string
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := word(1 + rng.IntN(5))
		if seen[k] {
			continue
		}
		seen[k] = true
		all = append(all, k)
		require.NoError(t, s.Set(k, val(time.Time{}, "")))
	}
	sort.Strings(all)
	for i := 0; i < 200; i++ {
		prefix, page := word(1+rng.IntN(3)), 1+rng.IntN(7)
		var want, got []string
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		after := ""
		if rng.IntN(4) == 0 {
			after = word(1) // a cursor below the prefix starts at the prefix
		}
		if after != "" && after >= prefix {
			after = ""
		}
		for {
			keys, err := s.PrefixKeys(prefix, after, page)
			require.NoError(t, err)
			got = append(got, keys...)
			if len(keys) < page {
				break
			}
			after = keys[len(keys)-1]
		}
		require.Equal(t, want, got, "prefix %q page %d", prefix, page)
	}
}
