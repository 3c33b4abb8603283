package bench

import (
	"encoding/json"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/store"
)

func TestExpectedEvery(t *testing.T) {
	t.Parallel()
	// Brute force: job i fires at second i%every + k*every.
	brute := func(jobs, every, from, d int) int64 {
		var n int64
		for i := 0; i < jobs; i++ {
			for s := i % every; s < from+d; s += every {
				if s >= from {
					n++
				}
			}
		}
		return n
	}
	for _, c := range [][4]int{{100, 60, 0, 30}, {100, 60, 0, 120}, {7, 60, 5, 61}, {1000, 7, 13, 50}, {3, 10, 0, 10}} {
		require.Equal(t, brute(c[0], c[1], c[2], c[3]), expectedEvery(c[0], c[1], c[2], c[3]), "%v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{Jobs: 10, Mode: ModeEvery, Every: time.Minute, Duration: time.Second}.Validate())
	err := Config{Jobs: 0, Mode: "x", Duration: 0}.Validate()
	require.ErrorContains(t, err, "jobs 0")
	require.ErrorContains(t, err, `mode "x"`)
	require.ErrorContains(t, err, "duration")
	require.Error(t, Config{Jobs: 1, Mode: ModeEvery, Every: 1500 * time.Millisecond, Duration: time.Second}.Validate())
	require.ErrorContains(t, Config{Jobs: 1, Mode: ModeAligned, Duration: time.Second, FirstFireAfter: -time.Second}.Validate(), "first fire after")
	require.NoError(t, Config{Jobs: 1, Mode: ModeAligned, Duration: time.Second, FirstFireAfter: 5 * time.Minute}.Validate())
}

func TestParseDispatch(t *testing.T) {
	t.Parallel()
	id, at, fired, ok := parseDispatch([]byte(`{"v":1,"fire_id":"j@2026-01-01T00:00:01Z","job_id":"j","trigger":"schedule","scheduled_at":"2026-01-01T00:00:01Z","fired_at":"2026-01-01T00:00:01.25Z"}`))
	require.True(t, ok)
	require.Equal(t, "j@2026-01-01T00:00:01Z", string(id))
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), at)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 1, 250_000_000, time.UTC), fired)
	_, _, _, ok = parseDispatch([]byte(`{"v":1}`))
	require.False(t, ok)
}

func TestSlices(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var arr []arrival
	for s := 0; s < 30; s++ {
		at := t0.Add(time.Duration(s) * time.Second)
		arr = append(arr, arrival{scheduled: at, received: at.Add(time.Duration(s) * time.Millisecond)})
	}
	got := slices(arr, t0, t0.Add(30*time.Second), 10*time.Second)
	require.Len(t, got, 3)
	for i, sl := range got {
		require.Equal(t, 10, sl.Fires)
		require.Equal(t, time.Duration(10*i+9)*time.Millisecond, sl.Max)
	}
}

func TestRandomPayloadIsJSONOfItsSize(t *testing.T) {
	t.Parallel()
	require.Nil(t, randomPayload(0))
	for _, n := range []int{2, 3, 100, 60_000, 65_000} {
		p := randomPayload(n)
		require.Len(t, p, n)
		require.True(t, json.Valid(p), "%d bytes", n)
	}
	require.Error(t, Config{Jobs: 1, Mode: ModeAligned, Duration: time.Second, PayloadBytes: 1}.Validate())
	require.NoError(t, Config{Jobs: 1, Mode: ModeAligned, Duration: time.Second, PayloadBytes: 60_000}.Validate())
}

func TestVmHWMReadsProcStatus(t *testing.T) {
	t.Parallel()
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	hwm, err := VmHWM(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, hwm, int64(64<<20), "the touched 64 MiB are resident")
	require.Equal(t, byte(1), ballast[len(ballast)-1])
	_, err = VmHWM(-1)
	require.Error(t, err)
}

// TestSampleHeldSeesAFloodAndARecovery: the sampler keeps the most stores
// held for each reason and the first and last samples that saw a flood,
// from a count that changes under it (none, then 2 in a flood, then 1 in
// a recovery), and stop waits for it.
func TestSampleHeldSeesAFloodAndARecovery(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	held := func() store.Held {
		switch n := calls.Add(1); {
		case n <= 2:
			return store.Held{}
		case n <= 5:
			return store.Held{Flood: 2}
		default:
			return store.Held{Recovery: 1}
		}
	}
	start := time.Now()
	var h Held
	stop := sampleHeld(held, start, &h)
	require.Eventually(t, func() bool { return calls.Load() >= 7 }, 10*time.Second, 10*time.Millisecond)
	stop()
	n := calls.Load()
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, n, calls.Load(), "no sample after stop")
	require.Equal(t, 2, h.FloodMax)
	require.Equal(t, 1, h.RecoveryMax)
	require.NotNil(t, h.FloodFirst)
	require.NotNil(t, h.FloodLast)
	// Samples 3 to 5 saw the flood: 2 and 4 ticks of 250 ms in (a tick
	// can come a little early).
	require.GreaterOrEqual(t, *h.FloodFirst, 450*time.Millisecond)
	require.GreaterOrEqual(t, *h.FloodLast-*h.FloodFirst, 450*time.Millisecond)
	require.Less(t, *h.FloodLast, time.Since(start))

	var none Held
	stop = sampleHeld(func() store.Held { return store.Held{} }, time.Now(), &none)
	stop()
	require.Equal(t, Held{}, none, "nothing held: no flood times")
}
