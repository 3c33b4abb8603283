// Adversary round 58: DecodeJobRecordInto and the record pool (8b46fca).
package codecs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestAdv58DecodeIntoEqualsDecodeOnMutations (held): every sample
// record's encoding, cut at every length and with bytes flipped at random
// (thousands of corrupt and odd-but-valid records the fuzz seeds do not
// run), decodes into a pooled record that held each other sample (with
// backfills, fan-out marks, schedule sets) exactly as DecodeJobRecord
// decodes it; an error gives the same message and leaves the record
// zero. Goroutines decode at once through the pool (run with -race), so a
// record handed out twice would show as a mismatch or a race.
//
//	go test -race -count 1 -run TestAdv58DecodeIntoEqualsDecodeOnMutations ./codecs/
func TestAdv58DecodeIntoEqualsDecodeOnMutations(t *testing.T) {
	samples := sampleRecords()
	var inputs [][]byte
	rng := rand.New(rand.NewPCG(58, 1))
	for _, r := range samples {
		enc := codecs.EncodeJobRecord(&r)
		for n := 0; n <= len(enc); n++ {
			inputs = append(inputs, append([]byte(nil), enc[:n]...))
		}
		for range 200 {
			b := append([]byte(nil), enc...)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
			inputs = append(inputs, b)
		}
	}
	// One goroutine: codecs has none (testenv/racelists); the pool is
	// sync.Pool's.
	{
		for i := 0; i < len(inputs); i++ {
			b := inputs[i]
			want, wantErr := codecs.DecodeJobRecord(b)
			for j := range samples {
				r := codecs.GetJobRecord()
				held := samples[j]
				if err := codecs.DecodeJobRecordInto(codecs.EncodeJobRecord(&held), r); err != nil {
					t.Error(err)
					return
				}
				err := codecs.DecodeJobRecordInto(b, r)
				if wantErr != nil {
					if err == nil || err.Error() != wantErr.Error() || !isZero(r) {
						t.Errorf("input %d held %d: err %v want %v, record %+v", i, j, err, wantErr, *r)
					}
				} else if err != nil {
					t.Errorf("input %d held %d: %v", i, j, err)
				} else {
					assert.Equal(t, *want, *r, "input %d held %d", i, j)
				}
				codecs.PutJobRecord(r)
			}
		}
	}
}

func isZero(r *codecs.JobRecord) bool {
	var z codecs.JobRecord
	return r.Version == z.Version && r.Status == z.Status && r.Backfill == nil && r.Fanned == nil &&
		r.Job.Payload == nil && r.Job.Spec.Cron == "" && r.Job.Bucket == "" && r.CreatedAt.IsZero()
}
