package scheduler

import (
	"time"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
)

// maxSteps bounds the late fires one job walks with Next in one plan, so a
// cron job firing every second after a month of downtime cannot stall a
// shard: past it, counting stops and the job jumps to its first on-time
// fire. `every` schedules count their late fires in closed form
// (schedule.Skip) and never walk more than the fires they keep.
const maxSteps = 100_000

// maxFires bounds the fires one job dispatches in one plan (a huge misfire
// grace on a fast schedule): past it, the job stays due at its first
// undispatched fire and continues in the next chunk or advance.
const maxFires = 10_000

// Fire is one dispatch a job owes.
type Fire struct {
	At     time.Time // the fire's due time
	Missed int64
	// Scheduled is the fire's scheduled time when it differs from At (a
	// jittered job's, see withScheduled); zero: At.
	Scheduled time.Time
}

// Plan is what one due job does in an advance to T.
type Plan struct {
	Fires  []Fire
	Missed int64     // late fires not dispatched (skip, or beyond the catch-up bound)
	Next   time.Time // the job's next due time: after T, or its first undispatched fire (<= T) when cut; zero: none (completed)
	Steps  int       // schedule steps (Next calls) the plan took: its CPU cost
}

// planFires computes the fires of a job whose first owed fire is due, for an
// advance to t. Fires later than grace (t - at > grace) follow the misfire
// policy; every fire within the grace is dispatched. maxCatchUp bounds
// fire_all. At most limit fires are planned (at least one, at most
// maxFires): a job with more stays due at its first undispatched fire (Next
// <= t), and the missed count rides on its first planned fire only.
func planFires(s schedule.Schedule, due, t time.Time, grace time.Duration, policy string, maxCatchUp, limit int, buf []Fire) Plan {
	p := Plan{Fires: buf[:0]}
	limit = min(max(limit, 1), maxFires)
	var late int64
	var lastLate time.Time
	at := due
	keep := int64(1) // fire_once and skip need the last late fire
	if policy == codecs.MisfireFireAll {
		keep = int64(maxCatchUp)
	}
	if skipped, resume, ok := schedule.Skip(s, due, t.Add(-grace), keep); ok && skipped > 0 {
		// Late fires counted in closed form: only the kept ones are walked.
		late, at = skipped, resume
		p.Steps++
	}
	steps := 0
	for !at.IsZero() && !at.After(t) {
		p.Steps++
		if t.Sub(at) <= grace {
			if len(p.Fires) >= limit {
				break
			}
			p.Fires = append(p.Fires, Fire{At: at})
			at = s.Next(at)
			continue
		}
		if steps++; steps > maxSteps {
			// Too many late fires to walk: count the rest as one (late is
			// then a lower bound) and jump to the first on-time fire, which
			// is after at because at is late.
			late++
			at = s.Next(t.Add(-grace - time.Nanosecond))
			continue
		}
		late++
		lastLate = at
		if policy == codecs.MisfireFireAll {
			p.Fires = append(p.Fires, Fire{At: at})
			if len(p.Fires) > maxCatchUp {
				p.Fires = p.Fires[1:]
			}
		}
		at = s.Next(at)
	}
	p.Next = at
	switch policy {
	case codecs.MisfireSkip:
		p.Missed = late
	case codecs.MisfireFireAll:
		p.Missed = late
		for _, f := range p.Fires {
			if t.Sub(f.At) > grace {
				p.Missed--
			}
		}
	default: // fire_once: one fire for the latest late time, carrying the count
		if late > 0 {
			p.Fires = append(p.Fires, Fire{})
			copy(p.Fires[1:], p.Fires)
			p.Fires[0] = Fire{At: lastLate, Missed: late - 1}
			p.Missed = late - 1
		}
		return p.cut(limit)
	}
	if p.Missed > 0 && len(p.Fires) > 0 {
		p.Fires[0].Missed += p.Missed
	}
	return p.cut(limit)
}

// cut keeps the first limit fires; the job stays due at the first one cut.
func (p Plan) cut(limit int) Plan {
	if len(p.Fires) > limit {
		p.Next = p.Fires[limit].At
		p.Fires = p.Fires[:limit]
	}
	return p
}
