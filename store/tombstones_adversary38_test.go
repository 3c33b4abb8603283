package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adv38SmallChunks runs n advances of one fire each, the steady state of
// jobs spread over time (one due per second, an advance a second): a scan
// from the floor, the job's record read, then the fire's move to the job's
// next time (jobs seconds later), with ApplyMoves (a point tombstone) or
// ApplyScannedMoves. The store holds jobs jobs, the i-th due at at(i)
// (adv38Jobs).
func adv38SmallChunks(tb testing.TB, s *Store, scanned bool, jobs, n int) {
	for i := range n {
		upTo := at(i)
		due, err := s.DueUpTo(upTo, Due{}, 2)
		require.NoError(tb, err)
		require.Len(tb, due, 1)
		_, err = s.GetMany([]string{due[0].Key})
		require.NoError(tb, err)
		moves := []Move{{Key: due[0].Key, From: due[0].At, To: due[0].At.Add(time.Duration(jobs) * time.Second)}}
		if scanned {
			require.NoError(tb, s.ApplyScannedMoves(moves, due[0], due[0], upTo))
		} else {
			require.NoError(tb, s.ApplyMoves(moves, upTo))
		}
	}
}

func adv38Jobs(tb testing.TB, s *Store, jobs int) *Store {
	for i := range jobs {
		require.NoError(tb, s.Set(keyN(i), val(at(i), "")))
	}
	return s
}

// TestAdversary38SmallChunksWriteNoRangeDeletion: adversary round 38 found
// that a range deletion per chunk made every chunk of one fire cost 49-125x
// a point deletion once thousands of them were in the memtable (Pebble
// fragments a memtable's range deletions again for the next iterator
// after each new one). ApplyScannedMoves now writes one only for a span
// of minRangeDeletion moves or more: 5,000 one-fire chunks write none,
// and the index is the same as with point deletions; chunks of
// minRangeDeletion moves write one each. (What it cost is measured by
// BenchmarkOneFireChunks.)
func TestAdversary38SmallChunksWriteNoRangeDeletion(t *testing.T) {
	t.Parallel()
	point := adv38Jobs(t, newMemStore(t, Options{Indexer: testIndexer}), 4000)
	scanned := adv38Jobs(t, newMemStore(t, Options{Indexer: testIndexer}), 4000)
	adv38SmallChunks(t, point, false, 4000, 5000)
	adv38SmallChunks(t, scanned, true, 4000, 5000)
	require.Zero(t, scanned.rangeDels.Load(), "range deletions for one-fire chunks")
	require.Equal(t, dumpIndexes(t, point), dumpIndexes(t, scanned))
	checkConsistent(t, scanned)

	// Chunks of minRangeDeletion moves: one range deletion each.
	const chunks = 3
	for i := range chunks * minRangeDeletion {
		require.NoError(t, scanned.Set(keyN(100_000+i), val(at(1_000_000), "")))
	}
	after := Due{At: at(999_999)} // behind the new jobs, after the others
	for c := range chunks {
		due, err := scanned.DueUpTo(at(1_000_000), after, minRangeDeletion)
		require.NoError(t, err)
		require.Len(t, due, minRangeDeletion, "chunk %d", c)
		moves := make([]Move, len(due))
		for i, d := range due {
			moves[i] = Move{Key: d.Key, From: d.At, To: at(2_000_000 + c)}
		}
		require.NoError(t, scanned.ApplyScannedMoves(moves, due[0], due[len(due)-1], at(1_000_000)))
	}
	require.Equal(t, uint64(chunks), scanned.rangeDels.Load())
	due, err := scanned.DueUpTo(at(1_000_000), after, 0)
	require.NoError(t, err)
	require.Zero(t, len(due), "entries left of the chunks")
	checkConsistent(t, scanned)
}

// BenchmarkOneFireChunks is the store's work per fire when every chunk
// holds one fire (adv38SmallChunks: 4,000 jobs, b.N advances of one fire),
// with point deletions and with ApplyScannedMoves; before the threshold
// (minRangeDeletion) ApplyScannedMoves cost 49x at 2,500 chunks, 125x at
// 20,000 (3.3 ms a fire).
//
//	go test -run '^$' -bench OneFireChunks -benchtime 20000x ./store/
func BenchmarkOneFireChunks(b *testing.B) {
	for _, scanned := range []bool{false, true} {
		name := "ApplyMoves"
		if scanned {
			name = "ApplyScannedMoves"
		}
		b.Run(name, func(b *testing.B) {
			s := adv38Jobs(b, newMemStore(b, Options{Indexer: testIndexer}), 4000)
			b.ResetTimer()
			adv38SmallChunks(b, s, scanned, 4000, b.N)
		})
	}
}
