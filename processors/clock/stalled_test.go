package clock

import (
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// fakeNow is a clock the test moves.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// TestAnnouncedAgeOracle drives AnnouncedAge with generated announced
// times (forward moves, repeats, moves back, none for a while) read at
// generated moments, against a model: the age is the time since the
// reading that first saw the latest announced time, or since the start
// while none was seen.
func TestAnnouncedAgeOracle(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		clk := &fakeNow{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		var announced time.Time
		a := NewAnnouncedAge(func() time.Time { return announced }, clk.now)
		since, seen := clk.now(), time.Time{}
		for i := range 300 {
			clk.add(time.Duration(rng.Intn(3000)) * time.Millisecond)
			switch rng.Intn(4) {
			case 0:
				announced = announced.Add(time.Duration(rng.Intn(3)) * time.Second)
				if announced.IsZero() {
					announced = clk.now()
				}
			case 1:
				announced = announced.Add(-time.Second) // never lowers what was seen
			}
			if announced.After(seen) {
				seen, since = announced, clk.now()
			}
			require.Equal(t, clk.now().Sub(since), a.Age(), "seed %d reading %d", seed, i)
		}
	}
}

// TestAnnouncedAgeGauges: every instance exports the age (a number from
// its start, never NaN) and its resolution; a clock that announces nothing
// past the threshold reads stalled on every instance, one announcing
// instance keeps the system from reading stalled.
func TestAnnouncedAgeGauges(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	var announced time.Time
	a := NewAnnouncedAge(func() time.Time { return announced }, clk.now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collectors(50 * time.Millisecond)...)
	require.Zero(t, gaugeValue(t, reg, AnnouncedAgeMetric), "a number from the start")
	clk.add(61 * time.Second)
	require.Equal(t, 61.0, gaugeValue(t, reg, AnnouncedAgeMetric))
	require.Equal(t, 0.05, gaugeValue(t, reg, ResolutionMetric))
	require.True(t, Stalled([]time.Duration{a.Age()}, []time.Duration{50 * time.Millisecond}))
	require.False(t, Stalled([]time.Duration{a.Age(), 0}, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}), "one instance sees the clock move")
	announced = clk.now()
	require.Zero(t, gaugeValue(t, reg, AnnouncedAgeMetric))
	require.False(t, Stalled(nil, nil))
}

func TestStalledThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ res, want time.Duration }{
		{0, time.Minute}, {10 * time.Millisecond, time.Minute}, {time.Second, time.Minute},
		{20 * time.Second, time.Minute}, {30 * time.Second, 90 * time.Second}, {time.Minute, 3 * time.Minute},
	} {
		require.Equal(t, c.want, StalledThreshold(c.res), "resolution %s", c.res)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
