package clock

import (
	"math"
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
// reading that first saw the latest announced time; the first one seen is
// aged by the wall clock from that time; none seen: unknown (-1), or with
// a table the time since the AnnouncedAge was made or since the table's
// time, whichever is longer (adversary 19f: the only pod restoring).
func TestAnnouncedAgeOracle(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		clk := &fakeNow{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		var announced, table time.Time
		a := NewAnnouncedAge(func() time.Time { return announced }, clk.now)
		withTable := seed%2 == 0 // the instance's: the clock table read before the first advance consumed
		if withTable {
			a.WithTable(func() time.Time { return table })
		}
		made := clk.now()
		var since, seen time.Time
		for i := range 300 {
			clk.add(time.Duration(rng.Intn(3000)) * time.Millisecond)
			if rng.Intn(5) == 0 { // the table moves (or is read for the first time), skewed either way
				table = clk.now().Add(time.Duration(rng.Intn(400_000)-100_000) * time.Millisecond)
			}
			switch rng.Intn(4) {
			case 0:
				announced = announced.Add(time.Duration(rng.Intn(3)) * time.Second)
				if announced.IsZero() { // the first: seen after it was announced, or a clock skewed either way
					announced = clk.now().Add(time.Duration(rng.Intn(200_000)-50_000) * time.Millisecond)
				}
			case 1:
				announced = announced.Add(-time.Second) // never lowers what was seen
			}
			if announced.After(seen) {
				since = clk.now()
				if seen.IsZero() {
					since = since.Add(-max(clk.now().Sub(announced), 0))
				}
				seen = announced
			}
			want := time.Duration(-1)
			switch {
			case !seen.IsZero():
				want = clk.now().Sub(since)
			case withTable: // since it was made, or since the table's time if longer
				want = clk.now().Sub(made)
				if !table.IsZero() {
					want = max(want, clk.now().Sub(table))
				}
			}
			require.Equal(t, want, a.Age(), "seed %d reading %d", seed, i)
		}
	}
}

// TestAnnouncedAgeGauges: every instance exports the age (NaN until it has
// seen an announced time, which the alert's min skips) and its resolution;
// a clock that announces nothing past the threshold reads stalled on every
// instance, one announcing instance keeps the system from reading stalled,
// and instances that have seen nothing neither stall nor unstall it.
func TestAnnouncedAgeGauges(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	var announced time.Time
	a := NewAnnouncedAge(func() time.Time { return announced }, clk.now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collectors(50*time.Millisecond, "chronos-clock")...)
	require.True(t, math.IsNaN(gaugeValue(t, reg, AnnouncedAgeMetric)), "unknown before the first announced time")
	require.False(t, Stalled([]time.Duration{a.Age()}, []time.Duration{50 * time.Millisecond}), "nothing known: not stalled")
	announced = clk.now().Add(-2 * time.Second) // the first seen, announced 2 s ago
	require.Equal(t, 2.0, gaugeValue(t, reg, AnnouncedAgeMetric), "the first time seen is aged by the wall clock")
	clk.add(59 * time.Second)
	require.Equal(t, 61.0, gaugeValue(t, reg, AnnouncedAgeMetric))
	require.Equal(t, 0.05, gaugeValue(t, reg, ResolutionMetric))
	require.True(t, Stalled([]time.Duration{a.Age()}, []time.Duration{50 * time.Millisecond}))
	require.False(t, Stalled([]time.Duration{a.Age(), 0}, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}), "one instance sees the clock move")
	require.True(t, Stalled([]time.Duration{a.Age(), -1}, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}), "an instance that has seen nothing does not hide a stall")
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
