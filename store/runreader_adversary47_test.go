package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// adv47Keys are n ascending table keys.
func adv47Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("job-%05d", i)
	}
	return keys
}

// adv47Run reads keys in order so that the run reader opens its iterator
// (runMinAscending reads in a row) and returns what each Get returned.
func adv47Run(t *testing.T, s *Store, keys []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.Get(k)
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

// TestAdversary47HeldEmptyValueReadAsPresent (held): a record whose value
// is empty (Set(k, []byte{})) is present: Get without RunReads returns a
// non-nil empty slice (getRaw's make), and goka's storage contract is
// "nil: no such key". The run reader returns bytes.Clone of the
// iterator's value, unlike Records.GetMany, which maps a nil value to
// []byte{} (adversary round 40). Pebble v2.1.7's iterator hands an empty
// value as a non-nil empty slice from memtables and from flushed and
// compacted tables, so this holds; it guards against a Pebble change.
func TestAdversary47HeldEmptyValueReadAsPresent(t *testing.T) {
	for _, where := range []string{"memtable", "flushed", "compacted"} {
		t.Run(where, func(t *testing.T) {
			keys := adv47Keys(40)
			var got [2][][]byte
			for i, runs := range []bool{false, true} {
				s := newMemStore(t, Options{RunReads: runs})
				for _, k := range keys {
					require.NoError(t, s.Set(k, []byte{}))
				}
				require.NoError(t, s.MarkRecovered())
				switch where {
				case "flushed":
					require.NoError(t, s.db.Flush())
				case "compacted":
					require.NoError(t, s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, true))
				}
				got[i] = adv47Run(t, s, keys)
				if runs {
					require.NotZero(t, s.RunHits(), "the run reader answered no read")
				}
			}
			for i, k := range keys {
				require.NotNil(t, got[0][i], "without RunReads: key %s is present", k)
				require.NotNil(t, got[1][i], "with RunReads: key %s (present, empty value) read as absent (read %d of the run)", k, i)
			}
		})
	}
}

// adv47BucketIndexer gives every record, whatever its value, the bucket
// named by its value ("" -> "empty").
func adv47BucketIndexer(_ Reader, _ string, value []byte) (Entry, error) {
	b := string(value)
	if b == "" {
		b = "empty"
	}
	return Entry{Bucket: b}, nil
}

// TestAdversary47HeldEmptyValueIndexConsistent (held): what the above
// would cost a store with an Indexer. A Get that returns nil records a miss
// (lastMiss), and the Set of that key right after it trusts the miss and
// skips reading the key's reverse entry (knownAbsent): the old index
// entries of the present record are never removed. After the run reader
// answered nil for an empty-valued record, Set would leave a dangling
// bucket entry (the key listed in bucket "empty" and in "full").
func TestAdversary47HeldEmptyValueIndexConsistent(t *testing.T) {
	keys := adv47Keys(20)
	s := newMemStore(t, Options{RunReads: true, Indexer: adv47BucketIndexer})
	for _, k := range keys {
		require.NoError(t, s.Set(k, []byte{}))
	}
	require.NoError(t, s.MarkRecovered())
	// the history group's pattern: read a record, write it back grown
	for _, k := range keys {
		_, err := s.Get(k)
		require.NoError(t, err)
		require.NoError(t, s.Set(k, []byte("full")))
	}
	require.NotZero(t, s.RunHits(), "the run reader answered no read")
	empty, err := s.BucketKeys("empty", "", 0)
	require.NoError(t, err)
	require.Empty(t, empty, "records rewritten into bucket \"full\" still listed in bucket \"empty\" (dangling index entries)")
	checkConsistent(t, s)
}
