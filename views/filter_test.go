package views

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
)

// TestListWhereMatchesOracle: the console's jobs page searches by id
// prefix and filters by bucket and state (issue 13 item 4). Seeded cases
// against an oracle: ids from a small alphabet (so prefixes share runs and
// end mid-partition), random buckets, states and tombstones; random
// filters, including prefixes that are ids themselves, that sort before
// or after every id, and that match nothing; random page limits. Following
// the cursors lists exactly the matching jobs, in (partition, id) order,
// each once.
func TestListWhereMatchesOracle(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 13))
			parts := int32(1 + rng.IntN(3))
			j := &Jobs{partitions: parts, schedules: schedule.NewCache(16)}
			b := j.stores.Builder(t.TempDir(), func(int32) store.Options { return store.Options{Indexer: bucketIndexer} })
			type entry struct {
				p              int32
				id             string
				status, bucket string
			}
			randID := func() string {
				var sb strings.Builder
				for range 1 + rng.IntN(4) {
					sb.WriteByte("abc."[rng.IntN(4)])
				}
				return sb.String()
			}
			var all []entry
			for p := range parts {
				s, err := b("table", p)
				require.NoError(t, err)
				require.NoError(t, s.Open())
				t.Cleanup(func() { _ = s.Close() })
				seen := map[string]bool{}
				for range rng.IntN(60) {
					id := randID()
					if seen[id] {
						continue
					}
					seen[id] = true
					st := []codecs.Status{codecs.StatusActive, codecs.StatusPaused, codecs.StatusCompleted, codecs.StatusDeleted}[rng.IntN(4)]
					bucket := []string{"", "x", "y"}[rng.IntN(3)]
					rec := &codecs.JobRecord{Version: 1, Status: st, UpdatedAt: time.Unix(0, 0)}
					if st != codecs.StatusDeleted {
						rec.Job.Bucket = bucket
					} else {
						bucket = ""
					}
					require.NoError(t, s.Set(id, codecs.EncodeJobRecord(rec)))
					all = append(all, entry{p: p, id: id, status: st.String(), bucket: bucket})
				}
			}
			sort.Slice(all, func(a, b int) bool {
				return all[a].p < all[b].p || (all[a].p == all[b].p && all[a].id < all[b].id)
			})
			for range 30 {
				f := Filter{
					Bucket: []string{"", "", "x", "y"}[rng.IntN(4)],
					Status: []string{"", "", "active", "paused", "completed"}[rng.IntN(5)],
				}
				switch rng.IntN(5) {
				case 0:
				case 1:
					f.Prefix = "0" // sorts before every id
				case 2:
					f.Prefix = "z" // after every id
				default:
					id := randID() // an id of some job, or not
					f.Prefix = id[:1+rng.IntN(len(id))]
				}
				var want, got []string
				for _, e := range all {
					if e.status != codecs.StatusDeleted.String() && strings.HasPrefix(e.id, f.Prefix) &&
						(f.Bucket == "" || e.bucket == f.Bucket) && (f.Status == "" || e.status == f.Status) {
						want = append(want, e.id)
					}
				}
				cursor := ""
				for calls := 0; ; calls++ {
					require.Less(t, calls, len(all)+10, "paging does not end")
					page, next, err := j.ListWhere(f, cursor, 1+rng.IntN(7))
					require.NoError(t, err)
					for _, s := range page {
						require.True(t, strings.HasPrefix(s.ID, f.Prefix), "%+v: %s", f, s.ID)
						got = append(got, s.ID)
					}
					if next == "" {
						break
					}
					cursor = next
				}
				require.Equal(t, want, got, "filter %+v", f)
			}
		})
	}
}
