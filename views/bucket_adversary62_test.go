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

// oldBucketIndexer is bucketIndexer before 83a2f2d: a full decode, nothing
// indexed when it fails.
func oldBucketIndexer(_ store.Reader, _ string, value []byte) (store.Entry, error) {
	rec, err := codecs.DecodeJobRecord(value)
	if err != nil {
		return store.Entry{}, nil
	}
	return store.Entry{Bucket: rec.Job.Bucket}, nil
}

// adv62Jobs builds one-partition views with the given indexer, filled with
// live, deleted and corrupt-after-the-bucket records of a few buckets.
func adv62Jobs(t *testing.T, seed uint64, indexer store.Indexer, deferred bool) *Jobs {
	rng := rand.New(rand.NewPCG(seed, 62))
	j := &Jobs{partitions: 1, schedules: schedule.NewCache(16)}
	b := j.stores.Builder(t.TempDir(), func(int32) store.Options {
		return store.Options{Indexer: indexer, DeferIndexOnRecovery: deferred, KeyFilter: deferred}
	})
	s, err := b("table", 0)
	require.NoError(t, err)
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	n := 50 + rng.IntN(200)
	for i := range n {
		rec := &codecs.JobRecord{Version: uint64(i), Status: codecs.StatusActive, UpdatedAt: time.Unix(int64(i), 0),
			Job: codecs.Job{Bucket: []string{"", "b", "c"}[rng.IntN(3)], Payload: []byte("p")}}
		if rng.IntN(6) == 0 {
			rec.Status = codecs.StatusDeleted
		}
		v := codecs.EncodeJobRecord(rec)
		switch rng.IntN(5) {
		case 0: // corrupt after the bucket: trailing bytes
			v = append(v, 0xff)
		case 1: // cut after the bucket
			v = v[:len(v)-3]
		}
		require.NoError(t, s.Set(fmt.Sprintf("j%04d", i), v))
	}
	if deferred {
		require.NoError(t, s.MarkRecovered())
	}
	return j
}

type adv62Page struct {
	IDs    []string
	Cursor bool
}

func adv62Pages(t *testing.T, j *Jobs, bucket string, limits []int) (pages []adv62Page, ids []string) {
	cursor := ""
	for i := 0; ; i++ {
		out, next, err := j.List(bucket, cursor, limits[i%len(limits)])
		require.NoError(t, err)
		var p adv62Page
		for _, s := range out {
			p.IDs = append(p.IDs, s.ID)
			require.Equal(t, bucket, s.Bucket)
		}
		p.Cursor = next != ""
		pages = append(pages, p)
		ids = append(ids, p.IDs...)
		if next == "" {
			return pages, ids
		}
		cursor = next
	}
}

// TestAdv62BucketListingSameJobs: following the cursors, a listing by
// bucket returns the same jobs, in order, with the new indexer (JobBucket)
// and the old one (full decode), incrementally indexed and after a
// deferred recovery. HOLDS (the claim of 83a2f2d).
func TestAdv62BucketListingSameJobs(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		limits := []int{1 + rng.IntN(5), 1 + rng.IntN(50)}
		old := adv62Jobs(t, seed, oldBucketIndexer, false)
		for _, deferred := range []bool{false, true} {
			nw := adv62Jobs(t, seed, bucketIndexer, deferred)
			for _, bucket := range []string{"b", "c"} {
				_, want := adv62Pages(t, old, bucket, limits)
				_, got := adv62Pages(t, nw, bucket, limits)
				require.True(t, sort.StringsAreSorted(got))
				require.Equal(t, want, got, "seed %d bucket %s deferred %v", seed, bucket, deferred)
			}
		}
	}
}
