package scheduler

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAnnouncedIsTheMaximum notes generated times from several goroutines
// at once (the partitions' callbacks) and checks the result against the
// maximum: never lowered by an older advance (a continuation, a partition
// behind its peers), zero before the first, a zero time ignored.
func TestAnnouncedIsTheMaximum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 5))
	base := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for range 50 {
		var a announced
		require.True(t, a.get().IsZero())
		parts := 1 + rng.IntN(8)
		seqs := make([][]time.Time, parts)
		var want time.Time
		for p := range seqs {
			for range rng.IntN(200) {
				var tm time.Time
				if rng.IntN(10) > 0 {
					tm = base.Add(time.Duration(rng.IntN(3_600_000)) * time.Millisecond)
				}
				seqs[p] = append(seqs[p], tm)
				if tm.After(want) {
					want = tm
				}
			}
		}
		var wg sync.WaitGroup
		for _, seq := range seqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, tm := range seq {
					a.note(tm)
				}
			}()
		}
		wg.Wait()
		require.True(t, want.Equal(a.get()), "want %s, got %s", want, a.get())
	}
}
