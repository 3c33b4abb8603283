package instance_test

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/testenv"
)

// TestClockLagOnlyFromTheOwner: chronos_clock_lag_seconds comes only from
// the instance that owns the clock partition. Instance A owns it alone and
// reports a lag; instance B joins and takes the partition (the group's
// copartitioning strategy gives the single partition to the lowest member
// id, and the broker makes member ids from the client id, so B's client id
// sorts first). A's gauge must then be NaN and stay NaN while its wall clock
// advances by an hour, instead of growing from its last announcement.
func TestClockLagOnlyFromTheOwner(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 2)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	var wall atomic.Int64 // the instances' wall clock, unix nanos
	wall.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, wall.Load()) }

	start := func(clientID string) *prometheus.Registry {
		cfg := env.Config()
		cfg.Kafka.ClientID = clientID
		cfg.Now = now
		reg := prometheus.NewRegistry()
		cfg.Registerer = reg
		env.Start(cfg)
		return reg
	}
	regA := start("chronos-z")
	env.Tick(t0)
	testenv.Eventually(t, 60*time.Second, func() error {
		if v := clockLag(t, regA); math.IsNaN(v) {
			return fmt.Errorf("A, alone, has not announced yet")
		}
		return nil
	})

	regB := start("chronos-a")
	tick := t0
	testenv.Eventually(t, 90*time.Second, func() error {
		// Ticks go on (time moves) until B, the new owner, announces one.
		tick = tick.Add(time.Second)
		wall.Store(tick.UnixNano())
		env.Tick(tick)
		if v := clockLag(t, regB); math.IsNaN(v) {
			return fmt.Errorf("B has not announced yet (A's lag %v)", clockLag(t, regA))
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, func() error {
		if v := clockLag(t, regB); v != 0 {
			return fmt.Errorf("B has not announced the last tick yet (lag %v)", v)
		}
		return nil
	})
	require.True(t, math.IsNaN(clockLag(t, regA)), "A lost the clock partition: its lag must be NaN, is %v", clockLag(t, regA))

	wall.Store(tick.Add(time.Hour).UnixNano())
	require.True(t, math.IsNaN(clockLag(t, regA)), "an hour later A's lag must still be NaN, is %v", clockLag(t, regA))
	require.Equal(t, time.Hour.Seconds(), clockLag(t, regB), "the owner's lag grows with its wall clock when no tick comes")
}

// clockLag returns chronos_clock_lag_seconds from reg.
func clockLag(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "chronos_clock_lag_seconds" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("chronos_clock_lag_seconds is not registered")
	return 0
}
