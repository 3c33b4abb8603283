package topology

import (
	"fmt"
	"strings"

	"github.com/lovoo/goka"
)

// Base names of the topics and groups; Names adds the configured prefix.
const (
	baseJobs           = "chronos-jobs"
	baseBucketTriggers = "chronos-bucket-triggers"
	baseDispatch       = "chronos-dispatch"
	baseRejects        = "chronos-rejects"
	baseClock          = "chronos-clock"
	baseShardTriggers  = "chronos-shard-triggers"
	baseScheduler      = "chronos-scheduler"
	baseClockGroup     = "chronos-clock"
	baseRouter         = "chronos-router"
	baseResults        = "chronos-results"
	baseHistory        = "chronos-history"
	baseCalendars      = "chronos-calendars"
)

// Names derives every topic and group name from one prefix. The zero value
// uses the documented names unchanged. Safe for concurrent use (a value).
type Names struct {
	// Prefix is prepended to every topic and group name (default "").
	// Use it to run several Chronos systems on one cluster, e.g. "staging.".
	Prefix string
}

// ValidatePrefix reports whether p can prefix Kafka topic names: at most 100
// characters of [a-zA-Z0-9._-].
func ValidatePrefix(p string) error {
	if len(p) > 100 {
		return fmt.Errorf("topology: prefix %q is longer than 100 characters", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return fmt.Errorf("topology: prefix %q has %q; only [a-zA-Z0-9._-] are allowed in topic names", p, r)
		}
	}
	return nil
}

// Jobs is the command topic producers write jobs to (key = job id).
func (n Names) Jobs() goka.Stream { return goka.Stream(n.Prefix + baseJobs) }

// BucketTriggers is the topic producers write named bucket triggers to.
func (n Names) BucketTriggers() goka.Stream { return goka.Stream(n.Prefix + baseBucketTriggers) }

// Dispatch is the topic every fire is written to (key = job id).
func (n Names) Dispatch() goka.Stream { return goka.Stream(n.Prefix + baseDispatch) }

// Rejects is the topic invalid commands go to, with the reason.
func (n Names) Rejects() goka.Stream { return goka.Stream(n.Prefix + baseRejects) }

// Clock is the single-partition topic every instance sends its wall time to.
func (n Names) Clock() goka.Stream { return goka.Stream(n.Prefix + baseClock) }

// ShardTriggers carries "advance to T" and bucket fires, one message per partition.
func (n Names) ShardTriggers() goka.Stream { return goka.Stream(n.Prefix + baseShardTriggers) }

// SchedulerGroup is the fan-out group (the one KEDA scales on lag).
func (n Names) SchedulerGroup() goka.Group { return goka.Group(n.Prefix + baseScheduler) }

// ClockGroup is the group that turns ticks into shard triggers.
func (n Names) ClockGroup() goka.Group { return goka.Group(n.Prefix + baseClockGroup) }

// RouterGroup is the group that routes bucket triggers to every shard.
func (n Names) RouterGroup() goka.Group { return goka.Group(n.Prefix + baseRouter) }

// SchedulerTable is the scheduler group's changelog (compacted).
func (n Names) SchedulerTable() goka.Table { return goka.GroupTable(n.SchedulerGroup()) }

// SchedulerLoop is the scheduler group's loopback topic.
func (n Names) SchedulerLoop() goka.Stream { return goka.Stream(string(n.SchedulerGroup()) + "-loop") }

// SchedulerBackfill is the scheduler group's topic for backfill steps, its
// second self-addressed topic: each completed advance sends every backfill
// in progress a step on it (keyed by the job), apart from the loopback so
// that the loopback's lag, which the shipped ScaledObject scales on, counts
// fan-out continuations and completions only, not paced backfill work.
func (n Names) SchedulerBackfill() goka.Stream {
	return goka.Stream(string(n.SchedulerGroup()) + "-backfill")
}

// ClockTable is the clock group's changelog (compacted, one partition).
func (n Names) ClockTable() goka.Table { return goka.GroupTable(n.ClockGroup()) }

// Calendars is the compacted, single-partition topic of named calendars
// (key = name, value = codecs.CalendarDef JSON, tombstone = deleted):
// every instance reads all of it (a goka view).
func (n Names) Calendars() goka.Table { return goka.Table(n.Prefix + baseCalendars) }

// Results is the topic executors report fire outcomes to (key = job id).
func (n Names) Results() goka.Stream { return goka.Stream(n.Prefix + baseResults) }

// HistoryGroup keeps each job's recent fires and changes.
func (n Names) HistoryGroup() goka.Group { return goka.Group(n.Prefix + baseHistory) }

// HistoryTable is the history group's changelog (compacted).
func (n Names) HistoryTable() goka.Table { return goka.GroupTable(n.HistoryGroup()) }
