package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

func TestGetManyMatchesGet(t *testing.T) {
	t.Parallel()
	s := New("db", Options{FS: vfs.NewMem()})
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	for i := 0; i < 200; i += 2 {
		require.NoError(t, s.Set(fmt.Sprintf("k%03d", i), []byte(fmt.Sprint(i))))
	}
	keys := []string{"k150", "k001", "k000", "k198", "k150", "zzz", "k042"}
	requireAsGet(t, s, keys, s.GetMany, "")
	require.NoError(t, s.Close())
	_, err := s.GetMany(keys)
	require.ErrorIs(t, err, ErrClosed)
}

// requireAsGet checks that getMany answers keys as s.Get answers each.
func requireAsGet(t *testing.T, s *Store, keys []string, getMany func([]string) ([][]byte, error), where string) {
	t.Helper()
	got, err := getMany(keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	for i, k := range keys {
		want, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, want, got[i], "%s key %s", where, k)
	}
}

// TestRecordsMatchGet reads generated groups of keys through one Records
// (runs of neighbours as a burst reads them, keys out of order, duplicates,
// keys between and past the table's) and compares every answer with Get,
// on tables spread over memtables and flushed files.
func TestRecordsMatchGet(t *testing.T) {
	t.Parallel()
	seeds := uint64(20)
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := New("db", Options{FS: vfs.NewMem()})
		require.NoError(t, s.Open())
		key := func(n int) string { return fmt.Sprintf("j%04d", n) }
		const space = 600
		for n := 0; n < 1500; n++ {
			k := key(rng.IntN(space))
			if rng.IntN(4) == 0 {
				require.NoError(t, s.Delete(k))
			} else {
				require.NoError(t, s.Set(k, []byte(fmt.Sprint(n))))
			}
			if rng.IntN(300) == 0 {
				require.NoError(t, s.db.Flush())
			}
		}
		r, err := s.Records()
		require.NoError(t, err)
		for g := 0; g < 40; g++ {
			var keys []string
			switch rng.IntN(3) {
			case 0: // a run of neighbours, as a burst's chunk reads them
				from := rng.IntN(space)
				for n := from; n < from+rng.IntN(80); n++ {
					keys = append(keys, key(n))
				}
			case 1: // anywhere, in any order, duplicates included
				for range rng.IntN(70) {
					keys = append(keys, key(rng.IntN(space+20)-10))
				}
			default: // outside the table's keys
				keys = []string{"a", "j", key(space + rng.IntN(5)), "z", key(rng.IntN(space))}
			}
			requireAsGet(t, s, keys, r.GetMany, fmt.Sprintf("seed %d group %d", seed, g))
		}
		// A write after the reader opened is not in its view.
		k := key(rng.IntN(space))
		before, err := s.Get(k)
		require.NoError(t, err)
		require.NoError(t, s.Set(k, []byte("later")))
		got, err := r.GetMany([]string{k})
		require.NoError(t, err)
		require.Equal(t, before, got[0])
		r.Close()
		r.Close()
		_, err = r.GetMany([]string{k})
		require.ErrorIs(t, err, errRecordsClosed)
		require.NoError(t, s.Close())
	}
}

// TestRecordsClosedWithItsStore: a Records left open does not keep its
// store from closing, and answers nothing after, with ErrClosed as every
// method of a closed store (adversary round 40 found another error).
func TestRecordsClosedWithItsStore(t *testing.T) {
	t.Parallel()
	s := New("db", Options{FS: vfs.NewMem()})
	require.NoError(t, s.Open())
	require.NoError(t, s.Set("a", []byte("1")))
	r, err := s.Records()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = r.GetMany([]string{"a"})
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Records()
	require.ErrorIs(t, err, ErrClosed)
}
