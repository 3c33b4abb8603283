package codecs_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv62JobBucketMutations (adversary round 62): every sample record,
// with a random bucket, mutated at random (bytes flipped, inserted,
// removed, cut, appended): whenever DecodeJobRecord reads it, JobBucket
// reads the same bucket; JobBucket's bucket is always a sub-slice of the
// input; and an unmutated record always gives its bucket. HOLDS.
func TestAdv62JobBucketMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(62, 62))
	buckets := []string{"", "b", "nightly", string(bytes.Repeat([]byte{'x'}, 200)), "\x00\xff"}
	checked, decoded, corruptButIndexed := 0, 0, 0
	for _, rec := range sampleRecords() {
		for _, bk := range buckets {
			rec.Job.Bucket = bk
			enc := codecs.EncodeJobRecord(&rec)
			got, ok := codecs.JobBucket(enc)
			require.True(t, ok)
			require.Equal(t, bk, string(got))
			for range 400 {
				m := append([]byte(nil), enc...)
				for range 1 + r.IntN(3) {
					if len(m) == 0 {
						break
					}
					i := r.IntN(len(m))
					switch r.IntN(5) {
					case 0:
						m[i] ^= byte(1 + r.IntN(255))
					case 1:
						m = append(m[:i], append([]byte{byte(r.IntN(256))}, m[i:]...)...)
					case 2:
						m = append(m[:i], m[i+1:]...)
					case 3:
						m = m[:i]
					case 4:
						m = append(m, byte(r.IntN(256)))
					}
				}
				checked++
				got, ok := codecs.JobBucket(m)
				d, err := codecs.DecodeJobRecord(m)
				if err == nil {
					decoded++
					require.True(t, ok, "%x", m)
					require.Equal(t, d.Job.Bucket, string(got), "%x", m)
				} else if ok {
					corruptButIndexed++
				}
				if ok && len(got) > 0 {
					// a sub-slice of m
					start := int(uintptr(unsafe.Pointer(&got[0])) - uintptr(unsafe.Pointer(&m[0])))
					require.True(t, start >= 0 && start+len(got) <= len(m), "not within the input")
				}
			}
		}
	}
	t.Logf("mutations %d, decoded %d, corrupt but given a bucket %d", checked, decoded, corruptButIndexed)
}
