package clock

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AnnouncedAgeMetric is the gauge every instance exports: seconds since it
// last saw the announced time move forward (AnnouncedAge).
const AnnouncedAgeMetric = "chronos_clock_announced_age_seconds"

// ResolutionMetric is the gauge of the instance's clock resolution in
// seconds (--resolution), which the stalled alert scales its threshold by.
const ResolutionMetric = "chronos_clock_resolution_seconds"

// AheadMetric is the gauge of how far the clock table's announced time is
// ahead of the ticks the clock owner receives (Clock.Ahead).
const AheadMetric = "chronos_clock_ahead_seconds"

// StalledMin is the shortest age the stalled alert reads as a stall.
const StalledMin = time.Minute

// StalledSteps is the number of resolution steps without an announcement
// the stalled alert reads as a stall when that is longer than StalledMin.
const StalledSteps = 3

// StalledExpr is the ChronosClockStalled alert's expression
// (deploy/prometheus/alerts.yml; a test keeps the two equal): per instance
// its announced age over StalledThreshold of its resolution, then the
// smallest of the system's instances, so that one stuck instance does not
// page and a fine resolution cannot.
const StalledExpr = "min by (job) (" + AnnouncedAgeMetric + " / clamp_min(3 * " + ResolutionMetric + ", 60)) > 1"

// StalledThreshold is the announced age past which the ChronosClockStalled
// alert reads an instance at resolution res (0 or less: 1 s) as stalled:
// the larger of StalledMin and StalledSteps resolution steps. A healthy
// instance's age saws from 0 to about one resolution.
func StalledThreshold(res time.Duration) time.Duration {
	if res <= 0 {
		res = DefaultResolution
	}
	return max(StalledMin, StalledSteps*res)
}

// Stalled evaluates StalledExpr on one system: ages and resolutions are the
// instances' gauges, index by index; true when every instance's age is past
// its StalledThreshold (and there is at least one).
func Stalled(ages []time.Duration, resolutions []time.Duration) bool {
	if len(ages) == 0 {
		return false
	}
	for i, a := range ages {
		if a <= StalledThreshold(resolutions[i]) {
			return false
		}
	}
	return true
}

// AnnouncedAge measures how long ago an instance last saw the announced
// time move forward, on its local monotonic clock: from when it was made
// until the first announcement it sees, then from each forward move it sees
// at a reading. It is exported by every instance, owner of the clock or
// not, and never NaN, so a clock that announces nothing (its owner stuck,
// its group rebalancing, or a clock table holding a time ahead of every
// tick: Clock.Ahead) shows as a number rising a second a second on every
// instance. Readings drive it (the scrape): a move between two readings
// counts from the later one. Safe for concurrent use.
type AnnouncedAge struct {
	announced func() time.Time
	now       func() time.Time
	mu        struct {
		sync.Mutex
		last  time.Time // the announced time seen at the last move
		since time.Time // when (by now) the move was seen
	}
}

// NewAnnouncedAge returns the age of the announced time that announced
// reports (scheduler.Scheduler.Announced), reading time from now (nil:
// time.Now, whose readings carry the monotonic clock).
func NewAnnouncedAge(announced func() time.Time, now func() time.Time) *AnnouncedAge {
	if now == nil {
		now = time.Now
	}
	a := &AnnouncedAge{announced: announced, now: now}
	a.mu.since = now()
	return a
}

// Age returns the time since the announced time last moved forward (or
// since a was made, before the first move).
func (a *AnnouncedAge) Age() time.Duration {
	t, now := a.announced(), a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.mu.last) {
		a.mu.last, a.mu.since = t, now
	}
	return max(now.Sub(a.mu.since), 0)
}

// Collectors returns chronos_clock_announced_age_seconds (Age) and
// chronos_clock_resolution_seconds (res; 0 or less: 1 s).
func (a *AnnouncedAge) Collectors(res time.Duration) []prometheus.Collector {
	if res <= 0 {
		res = DefaultResolution
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: AnnouncedAgeMetric,
			Help: "Seconds since this instance last saw the announced time (the latest \"advance to T\" its scheduler consumed) move forward, or since it started. " +
				"Saws from 0 to about one clock resolution while the clock announces; rises a second a second on every instance while it does not."},
			func() float64 { return a.Age().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: ResolutionMetric,
			Help: "This instance's clock resolution (--resolution) in seconds."},
			func() float64 { return res.Seconds() }),
	}
}
