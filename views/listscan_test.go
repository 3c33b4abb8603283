package views

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// TestListReadsBoundedKeysPerPage: deleted jobs stay in the table as
// tombstones for codecs.DeletedRetention (8 days), and a listing skips them.
// A workload that deletes its jobs (one-shot reminders cleaned up after
// use) can hold millions of tombstones between two live jobs, and a listing
// used to read through all of them in one request to fill its page: one
// GET /v1/jobs?limit=1 cost CPU proportional to every deleted job of the
// last 8 days. The promise (issue 18, "CPU bounded per callback and per
// request"; docs/security.md): one List call reads at most maxListScan
// keys of the view (plus one per partition to see whether more follow),
// answering a short or empty page with a cursor when it stops early, and
// following the cursors still lists every live job exactly once, in order.
//
// Seeded cases against an oracle: random partitions, buckets, statuses,
// runs of tombstones longer than maxListScan, random page limits.
func TestListReadsBoundedKeysPerPage(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 18))
			parts := int32(1 + rng.IntN(3))
			j := &Jobs{partitions: parts, schedules: schedule.NewCache(16)}
			b := j.stores.Builder(t.TempDir(), func(int32) store.Options { return store.Options{Indexer: bucketIndexer} })
			type entry struct {
				p      int32
				id     string
				live   bool
				bucket string
			}
			var all []entry
			for p := range parts {
				s, err := b("table", p)
				require.NoError(t, err)
				require.NoError(t, s.Open())
				t.Cleanup(func() { _ = s.Close() })
				n := rng.IntN(6)
				for i := range n {
					// Runs of tombstones, some longer than a request may read.
					run := rng.IntN(3) * (maxListScan/2 + rng.IntN(maxListScan))
					for k := range run {
						all = append(all, entry{p: p, id: fmt.Sprintf("j%d-%02d-%06d", p, i, k)})
					}
					all = append(all, entry{p: p, id: fmt.Sprintf("j%d-%02d-z", p, i), live: true, bucket: []string{"", "b"}[rng.IntN(2)]})
				}
				for _, e := range all {
					if e.p != p {
						continue
					}
					rec := &codecs.JobRecord{Version: 1, Status: codecs.StatusDeleted, UpdatedAt: time.Unix(0, 0)}
					if e.live {
						rec.Status = []codecs.Status{codecs.StatusActive, codecs.StatusPaused, codecs.StatusCompleted}[rng.IntN(3)]
						rec.Job.Bucket = e.bucket
					}
					require.NoError(t, s.Set(e.id, codecs.EncodeJobRecord(rec)))
				}
			}
			sort.Slice(all, func(a, b int) bool {
				return all[a].p < all[b].p || (all[a].p == all[b].p && all[a].id < all[b].id)
			})
			for _, bucket := range []string{"", "b"} {
				// The keys a listing reads: the whole table, or the
				// bucket's index (tombstones have no bucket).
				var keys []entry
				var want, got []string
				for _, e := range all {
					if bucket == "" || e.bucket == bucket {
						keys = append(keys, e)
					}
					if e.live && (bucket == "" || e.bucket == bucket) {
						want = append(want, e.id)
					}
				}
				// pos is how many of those keys a cursor has passed.
				pos := func(cursor string) int {
					if cursor == "" {
						return len(keys)
					}
					p, after, err := decodeCursor(cursor, parts)
					require.NoError(t, err)
					return sort.Search(len(keys), func(i int) bool {
						return keys[i].p > p || (keys[i].p == p && keys[i].id > after)
					})
				}
				cursor, at := "", 0
				for calls := 0; ; calls++ {
					require.Less(t, calls, len(keys)+10, "paging does not end")
					page, next, err := j.List(bucket, cursor, 1+rng.IntN(20))
					require.NoError(t, err)
					for _, s := range page {
						got = append(got, s.ID)
					}
					end := pos(next)
					require.LessOrEqual(t, end-at, maxListScan+int(parts), "bucket %q: one call read past %d keys (from key %d to %d)", bucket, maxListScan, at, end)
					if next == "" {
						break
					}
					require.Greater(t, end, at, "a cursor that does not move")
					cursor, at = next, end
				}
				require.Equal(t, want, got, "bucket %q: the pages list every live job once, in order", bucket)
			}
		})
	}
}
