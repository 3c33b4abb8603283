package clock

import (
	"math"
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

// ClockGroupLabel is the label the clock gauges carry: the clock group's
// name, which includes the topic prefix, so one per Chronos system.
const ClockGroupLabel = "clock_group"

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
const StalledExpr = "min by (namespace, job, " + ClockGroupLabel + ") (" + AnnouncedAgeMetric + " / clamp_min(3 * " + ResolutionMetric + ", 60)) > 1"

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
// instances' gauges, index by index; a negative age is an instance that
// has seen no announced time yet (its gauge is NaN, which PromQL's min
// skips). True when every instance with an age is past its
// StalledThreshold (and there is at least one).
func Stalled(ages []time.Duration, resolutions []time.Duration) bool {
	known := 0
	for i, a := range ages {
		if a < 0 {
			continue
		}
		known++
		if a <= StalledThreshold(resolutions[i]) {
			return false
		}
	}
	return known > 0
}

// AnnouncedAge measures how long ago an instance last saw the announced
// time move forward, on its local monotonic clock. It is exported by every
// instance, owner of the clock or not, so a clock that announces nothing
// (its owner stuck, its group rebalancing, or a clock table holding a time
// ahead of every tick: Clock.Ahead) shows as a number rising a second a
// second on every instance. Readings drive it (the scrape): a move between
// two readings counts from the later one.
//
// Before the instance has seen any announced time its age is unknown
// (negative; the gauge reads NaN, which the alert's min skips), not the
// time since it started: an instance restarting every few minutes would
// otherwise keep the system's smallest age young through a stall
// (adversary 19d, TestRestartingInstanceKeepsStalledAlert). With a table
// (WithTable: the clock table, which the instance reads before its
// scheduler starts) it is known from the start: the larger of the time
// since the AnnouncedAge was made and the time since the table's
// announced time, by the wall clock. A pod restoring its partitions
// consumes no advance, and when every pod restores (the only pod
// restarted) the alert must have a sample (adversary 19f); a restart
// during a stall reads the stall's age, not its own. The first time it
// sees is dated by the wall clock: that time is the newest the system
// announced, so its age is at least now minus it (a stall that began
// before this instance started counts from its start, not the instance's);
// the next move resets it, so a skewed wall clock matters only while the
// clock is stalled anyway: a pod whose clock is S behind, restarted during
// a stall younger than S, reads a young age and delays the alert by up
// to S (TestAdv19fSlowPodClockRestartHidesStall, kept under its tag; keep
// pods' clocks synchronised). Likewise a pod restarted while the clock
// table is ahead of every tick: its first time seen (the table's, or its
// partitions' watermarks) is in the future, dated now, so its age restarts
// and so does the alert's wait (TestAdv19gClockAheadRestartResetsStalled,
// tagged); ChronosClockAhead still fires. Safe for concurrent use.
type AnnouncedAge struct {
	announced func() time.Time
	table     func() time.Time
	now       func() time.Time
	made      time.Time
	mu        struct {
		sync.Mutex
		last  time.Time // the announced time seen at the last move
		since time.Time // when (by now) the move was seen
	}
}

// NewAnnouncedAge returns the age of the announced time that announced
// reports (zero: none seen yet), reading time from now (nil: time.Now,
// whose readings carry the monotonic clock).
func NewAnnouncedAge(announced func() time.Time, now func() time.Time) *AnnouncedAge {
	if now == nil {
		now = time.Now
	}
	return &AnnouncedAge{announced: announced, now: now, made: now()}
}

// WithTable makes the age known before the first announced time seen:
// table returns the clock table's announced time (zero: not read yet).
// It returns a.
func (a *AnnouncedAge) WithTable(table func() time.Time) *AnnouncedAge {
	a.table = table
	return a
}

// Age returns the time since the announced time last moved forward, or -1
// before the instance has seen any announced time (without a table).
func (a *AnnouncedAge) Age() time.Duration {
	t, now := a.announced(), a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.mu.last) {
		if a.mu.last.IsZero() {
			// The first time seen: dated by the wall clock (t carries no
			// monotonic reading, so Sub compares wall times).
			a.mu.since = now.Add(-max(now.Sub(t), 0))
		} else {
			a.mu.since = now
		}
		a.mu.last = t
	}
	if a.mu.last.IsZero() {
		if a.table == nil {
			return -1
		}
		d := now.Sub(a.made)
		if tt := a.table(); !tt.IsZero() {
			d = max(d, now.Sub(tt))
		}
		return max(d, 0)
	}
	return max(now.Sub(a.mu.since), 0)
}

// Collectors returns chronos_clock_announced_age_seconds (Age) and
// chronos_clock_resolution_seconds (res; 0 or less: 1 s).
//
// Both carry the label clock_group, the clock group's name (with the topic
// prefix), so that the alert tells apart systems scraped under one job in
// one namespace (adversary 19e: two Helm releases, each with its own
// topicPrefix, in one namespace).
func (a *AnnouncedAge) Collectors(res time.Duration, clockGroup string) []prometheus.Collector {
	labels := prometheus.Labels{ClockGroupLabel: clockGroup}
	if res <= 0 {
		res = DefaultResolution
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: AnnouncedAgeMetric, ConstLabels: labels,
			Help: "Seconds since this instance last saw the announced time (the latest \"advance to T\" its scheduler consumed, or its partitions' watermarks) move forward; before it has seen one, the time since it started or since the clock table's announced time, whichever is longer. " +
				"Saws from 0 to about one clock resolution while the clock announces; rises a second a second on every instance while it does not."},
			func() float64 {
				if d := a.Age(); d >= 0 {
					return d.Seconds()
				}
				return math.NaN()
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: ResolutionMetric, ConstLabels: labels,
			Help: "This instance's clock resolution (--resolution) in seconds."},
			func() float64 { return res.Seconds() }),
	}
}
