package schedule

import (
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser is robfig's parser with an optional leading seconds field and
// descriptors. It is only used for parsing; the search is implemented here.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig's marker for a field written as "*" or "?".
const starBit = 1 << 63

// searchDays bounds the wall-clock search: 9 years of days covers every
// satisfiable schedule, including "29 Feb" across the non-leap year 2100
// (2096 -> 2104). Schedules with no match in that window (e.g. "0 0 30 2 *")
// return the zero time.
const searchDays = 9*366 + 1

// cycleDays is the Gregorian cycle: 400 years, 20,871 weeks. A schedule with
// calendar items that has no match in it has none at all.
const cycleDays = 146097 + 1

// cronSchedule is a cron expression evaluated against wall-clock time in loc.
type cronSchedule struct {
	sec, min, hour uint64 // bit i set: value i matches (star bit cleared)
	dom, month     uint64 // bits 1..31, 1..12
	dow            uint64 // bits 0..6
	domStar        bool   // dom or dow was "*"/"?": both must match (else either)
	cal            calendar
	hasCal         bool // some calendar item (L, W, #): search the 400-year cycle
	gapSkip        bool // DST policy: wall times in a gap do not fire
	overlap        uint8
	firstSec       int
	firstMin       int
	loc            *time.Location
	b              bounds
}

func parseCron(expr string, loc *time.Location, b bounds, dst DST) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	var (
		cal                    calendar
		hasCal                 bool
		domCalOnly, dowCalOnly bool
		domStarOK, dowStarOK   = true, true // a field with calendar items is restricted
	)
	if strings.HasPrefix(expr, "@") {
		if strings.HasPrefix(expr, "@every") {
			return nil, errorf("cron", "@every is not accepted in cron, use the every field")
		}
		if !descriptors[expr] {
			return nil, errorf("cron", "unknown descriptor %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)", expr)
		}
	} else {
		fields := strings.Fields(expr)
		if len(fields) != 5 && len(fields) != 6 {
			return nil, errorf("cron", "expected 5 or 6 fields, got %d", len(fields))
		}
		if isTZPrefix(fields[0]) {
			return nil, errorf("cron", "TZ= / CRON_TZ= prefixes are not accepted, use the tz field")
		}
		n := len(fields)
		domRest, dowRest, domCal, dowCal, k, err := splitCalendar(fields[n-3], fields[n-1])
		if err != nil {
			return nil, err
		}
		if domCal || dowCal {
			cal, hasCal = k, true
			domCalOnly, dowCalOnly = domCal && domRest == "", dowCal && dowRest == ""
			if domCalOnly {
				domRest = "1" // placeholder, cleared below
			}
			if dowCalOnly {
				dowRest = "0"
			}
			fields[n-3], fields[n-1] = domRest, dowRest
			domStarOK, dowStarOK = !domCal, !dowCal
		}
		expr = strings.Join(fields, " ")
	}
	parsed, err := parser.Parse(expr)
	if err != nil {
		return nil, errorf("cron", "%v", err)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, errorf("cron", "unsupported expression %q", expr)
	}
	c := &cronSchedule{
		sec:     ss.Second &^ starBit & (1<<60 - 1),
		min:     ss.Minute &^ starBit & (1<<60 - 1),
		hour:    ss.Hour &^ starBit & (1<<24 - 1),
		dom:     ss.Dom &^ starBit & (1<<32 - 2),
		month:   ss.Month &^ starBit & (1<<13 - 2),
		dow:     ss.Dow &^ starBit & (1<<7 - 1),
		domStar: (domStarOK && ss.Dom&starBit != 0) || (dowStarOK && ss.Dow&starBit != 0),
		cal:     cal,
		hasCal:  hasCal,
		gapSkip: dst.Gap == GapSkip,
		loc:     loc,
		b:       b,
	}
	switch dst.Overlap {
	case OverlapLast:
		c.overlap = overlapLast
	case OverlapBoth:
		c.overlap = overlapBoth
	}
	if domCalOnly {
		c.dom = 0
	}
	if dowCalOnly {
		c.dow = 0
	}
	if c.sec == 0 || c.min == 0 || c.hour == 0 || c.month == 0 || (c.dom == 0 && c.dow == 0 && !hasCal) {
		return nil, errorf("cron", "expression %q matches nothing", expr)
	}
	c.firstSec = bits.TrailingZeros64(c.sec)
	c.firstMin = bits.TrailingZeros64(c.min)
	return c, nil
}

// periodEnd returns the end (Unix seconds, > a) of the zone period that
// holds instant a (zt is a in c.loc), whose offset is off; ok is false when the offset never
// changes again. Go's ZoneBounds can report an end at or before a (seen for
// the last days of a year computed from a zone's rule string, e.g. Berlin
// after 2024-12-31T00:00Z); the end is then found by probing day by day
// and bisecting.
func (c *cronSchedule) periodEnd(zt time.Time, a, off int64) (int64, bool) {
	_, end := zt.ZoneBounds()
	if end.IsZero() {
		return 0, false
	}
	if e := end.Unix(); e > a {
		return e, true
	}
	offAt := func(u int64) int64 { _, o := time.Unix(u, 0).In(c.loc).Zone(); return int64(o) }
	lo := a
	for hi := a + 86400; hi <= a+800*86400; hi += 86400 {
		if offAt(hi) == off {
			lo = hi
			continue
		}
		for hi-lo > 1 { // offAt(lo) == off, offAt(hi) != off
			mid := lo + (hi-lo)/2
			if offAt(mid) == off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi, true
	}
	return 0, false
}

// Overlap policies as stored in cronSchedule.overlap.
const (
	overlapFirst = iota
	overlapLast
	overlapBoth
)

// Next implements Schedule.
//
// Let wall(u) be the local wall-clock reading at instant u. A matching wall
// time W fires at the instants the DST policy gives: an ordinary W at its
// unique instant; a repeated (fall-back) W at its first occurrence, its last,
// or both; a skipped (spring-forward) W when the gap ends (shift) or never
// (skip). Under each of first and last, the instant is non-decreasing in W,
// so Next(t) is the instant of the first matching W whose instant is after
// t; under both, it is the earlier of the two.
func (c *cronSchedule) Next(t time.Time) time.Time {
	t = c.b.from(t)
	if c.b.hasEnd && !t.Before(c.b.end) {
		return time.Time{}
	}
	sec := t.Unix() // floor: fire times are whole seconds, so u > t <=> u > sec
	if sec > maxUnix {
		return time.Time{}
	}
	if sec < minUnix {
		sec = minUnix
	}
	var u int64
	switch c.overlap {
	case overlapFirst:
		u = c.next(sec, false)
	case overlapLast:
		u = c.next(sec, true)
	default:
		u = c.next(sec, false)
		if l := c.next(sec, true); l != 0 && (u == 0 || l < u) {
			u = l
		}
	}
	if u == 0 || u > maxUnix {
		return time.Time{}
	}
	n := time.Unix(u, 0).In(c.loc)
	if c.b.hasEnd && n.After(c.b.end) {
		return time.Time{}
	}
	return n
}

// next returns the first fire instant (Unix seconds) after sec when repeated
// wall times fire at their first (last false) or last occurrence, or 0.
func (c *cronSchedule) next(sec int64, last bool) int64 {
	lt := time.Unix(sec, 0).In(c.loc)
	_, off := lt.Zone()
	thr := sec + int64(off) + 1 // first wall second not yet reached
	start, _ := lt.ZoneBounds()
	if !last && !start.IsZero() {
		// Just after a fall-back transition the wall clock re-reads times
		// already reached before it; those are not reached "again".
		if s := start.Unix(); sec-s < 2*86400 {
			_, prev := time.Unix(s-1, 0).In(c.loc).Zone()
			if hw := s + int64(prev); hw > thr {
				thr = hw
			}
		}
	}
	if last && !start.IsZero() {
		// Before a fall-back transition, the wall times it repeats that
		// were already read fire in their second pass.
		if e, ok := c.periodEnd(lt, sec, int64(off)); ok && e-sec < 2*86400 {
			_, nextOff := time.Unix(e, 0).In(c.loc).Zone()
			if rs := e + int64(nextOff); rs < thr {
				thr = rs
			}
		}
	}
	for range 64 {
		w, ok := c.nextWall(thr)
		if !ok {
			return 0
		}
		first, lastU, gapEnd, gapWall := c.resolve(w)
		var u int64
		switch {
		case gapWall != 0 && c.gapSkip:
			// w and every wall time up to the end of the gap do not exist.
			thr = max(gapWall, w+1)
			continue
		case gapWall != 0:
			u = gapEnd
		case last:
			u = lastU
		default:
			u = first
		}
		if u <= sec {
			// Only in zones with several back-to-back backward jumps.
			thr = w + 1
			continue
		}
		return u
	}
	return 0
}

// resolve finds the instants (Unix seconds) at which the wall clock in c.loc
// reads w (wall-clock seconds since 1970-01-01T00:00 local): the first and
// the last (equal unless w is repeated by a fall-back transition). When no
// instant reads w (a spring-forward gap), gapWall is the first wall time
// after the gap (non-zero) and gapEnd the instant the gap ends.
func (c *cronSchedule) resolve(w int64) (first, last, gapEnd, gapWall int64) {
	// Start one day earlier: the wall clock then certainly reads less than w.
	a := w - 86400
	found := false
	for i := 0; i < 16; i++ {
		zt := time.Unix(a, 0).In(c.loc)
		_, o := zt.Zone()
		off := int64(o)
		if i > 0 && w < a+off && !found {
			return 0, 0, a, a + off // w was skipped by the transition at a
		}
		end, hasEnd := c.periodEnd(zt, a, off)
		if (i == 0 || a+off <= w) && (!hasEnd || w < end+off) {
			// w is read in this zone period
			if !found {
				first, found = w-off, true
			}
			last = w - off
		}
		if !hasEnd || end > w+86400 {
			break
		}
		a = end
	}
	if !found { // unreachable for real zones: treat as ordinary
		return w, w, 0, 0
	}
	return first, last, 0, 0
}

// nextWall returns the first matching wall time >= w (seconds since
// 1970-01-01T00:00 in wall-clock terms), searching at most searchDays days.
func (c *cronSchedule) nextWall(w int64) (int64, bool) {
	day := floorDiv(w, 86400)
	sod := int(w - day*86400)
	y, m, d := civilFromDays(day)
	limit := day + searchDays
	if c.hasCal {
		// Calendar items repeat with the Gregorian cycle (400 years, a
		// whole number of weeks); "0 0 * 2 0#5" fires every 28 years or so.
		limit = day + cycleDays
	}
	for day <= limit {
		if c.month&(1<<uint(m)) == 0 {
			day += int64(daysIn(y, m) - d + 1)
			d, sod = 1, 0
			if m++; m > 12 {
				m, y = 1, y+1
			}
			continue
		}
		if c.dayMatches(d, day, y, m) {
			if s, ok := c.firstInDay(sod); ok {
				return day*86400 + int64(s), true
			}
		}
		day++
		d++
		sod = 0
		if d > daysIn(y, m) {
			d = 1
			if m++; m > 12 {
				m, y = 1, y+1
			}
		}
	}
	return 0, false
}

// dayMatches applies robfig's rule: if dom or dow is a star, both must
// match; otherwise either may match. Calendar items (L, W, #) count as a
// restricted field of their own side.
func (c *cronSchedule) dayMatches(d int, day int64, y int64, m int) bool {
	wd := int((day%7 + 11) % 7) // 1970-01-01 was a Thursday (4)
	domMatch := c.dom&(1<<uint(d)) != 0
	dowMatch := c.dow&(1<<uint(wd)) != 0
	if c.hasCal {
		dim := daysIn(y, m)
		domMatch = domMatch || c.cal.domMatches(d, wd, dim)
		dowMatch = dowMatch || c.cal.dowMatches(d, wd, dim)
	}
	if c.domStar {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// firstInDay returns the first matching second-of-day >= sod.
func (c *cronSchedule) firstInDay(sod int) (int, bool) {
	h, m, s := sod/3600, sod/60%60, sod%60
	if c.hour&(1<<uint(h)) != 0 {
		if c.min&(1<<uint(m)) != 0 {
			if ss := nextBit(c.sec, s); ss < 60 {
				return h*3600 + m*60 + ss, true
			}
		}
		if mm := nextBit(c.min, m+1); mm < 60 {
			return h*3600 + mm*60 + c.firstSec, true
		}
	}
	if hh := nextBit(c.hour, h+1); hh < 24 {
		return hh*3600 + c.firstMin*60 + c.firstSec, true
	}
	return 0, false
}

// nextBit returns the lowest set bit of mask at position >= from, or 64.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return 64
	}
	return bits.TrailingZeros64(mask & (^uint64(0) << uint(from)))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
