package store

import (
	"fmt"
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
	got, err := s.GetMany(keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	for i, k := range keys {
		want, err := s.Get(k)
		require.NoError(t, err)
		require.Equal(t, want, got[i], "key %s", k)
	}
	require.NoError(t, s.Close())
	_, err = s.GetMany(keys)
	require.ErrorIs(t, err, ErrClosed)
}
