package store

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// goka returns from markRecovered on a cancelled context while
// MarkRecovered still runs; shutdown then closes the store. No panic, no
// hang, no lost write.
func TestAdv20bCloseRacesReopen(t *testing.T) {
	for round := 0; round < 30; round++ {
		fs := vfs.NewMem()
		opts := deferOpts(fs)
		opts.RecoveryL0CompactionThreshold = 16
		s := New("/db", opts)
		require.NoError(t, s.Open())
		for i := 0; i < 300; i++ {
			require.NoError(t, s.Set(keyN(i), val(at(i), "b")))
			require.NoError(t, s.SetOffset(int64(i)))
		}
		mr := make(chan error, 1)
		go func() { mr <- s.MarkRecovered() }()
		time.Sleep(time.Duration(round%10) * 100 * time.Microsecond)
		cl := make(chan error, 1)
		go func() { cl <- s.Close() }()
		for _, ch := range []chan error{mr, cl} {
			select {
			case err := <-ch:
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-time.After(10 * time.Second * watchdogScale):
				t.Fatalf("round %d: hang", round)
			}
		}
		s2 := New("/db", opts)
		require.NoError(t, s2.Open())
		require.Equal(t, 300, len(tableState(t, s2)))
		off, err := s2.GetOffset(-1)
		require.NoError(t, err)
		require.Equal(t, int64(299), off)
		require.NoError(t, s2.MarkRecovered())
		checkConsistent(t, s2)
		require.NoError(t, s2.Close())
	}
}
