package schedule

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cache is a bounded cache of parsed schedules keyed by Spec (all fields),
// safe for concurrent use. When it holds max entries, the next insertion
// drops everything first. Only successful parses are cached.
//
// Keys compare time.Time fields with ==, so the same instant in a different
// *time.Location (or with a monotonic reading) is a different key; that only
// costs a cache miss.
type Cache struct {
	mu  sync.RWMutex
	m   map[cacheKey]Schedule
	max int
}

// cacheKey is a Spec made comparable: its members and exclusions, when it
// has any, are written out in extra.
type cacheKey struct {
	cron           string
	every          time.Duration
	at, start, end time.Time
	tz             string
	dst            DST
	extra          string
}

func keyOf(s Spec) cacheKey {
	k := cacheKey{cron: s.Cron, every: s.Every, at: s.At, start: s.Start, end: s.End, tz: s.TZ, dst: s.DST}
	if len(s.Also) == 0 && s.Exclude.IsZero() {
		return k
	}
	var b strings.Builder
	for _, m := range s.Also {
		// Lengths before strings: no two Specs write the same text.
		for _, f := range []string{m.Cron, m.TZ, m.DST.Gap, m.DST.Overlap} {
			b.WriteString(strconv.Itoa(len(f)))
			b.WriteByte(':')
			b.WriteString(f)
		}
		writeInts(&b, int64(m.Every), int64(len(m.Also)), boolInt(m.Exclude.IsZero()))
		writeTimes(&b, m.At, m.Start, m.End)
	}
	b.WriteString("|" + strconv.Itoa(len(s.Exclude.TZ)) + ":" + s.Exclude.TZ)
	for _, d := range s.Exclude.Dates {
		writeInts(&b, d.key())
	}
	b.WriteByte('|')
	for _, r := range s.Exclude.Ranges {
		writeTimes(&b, r.From, r.To)
	}
	for _, c := range s.Exclude.Calendars {
		b.WriteString("|" + strconv.Itoa(len(c)) + ":" + c)
	}
	k.extra = b.String()
	return k
}

func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

func writeInts(b *strings.Builder, vs ...int64) {
	for _, v := range vs {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(',')
	}
}

// writeTimes writes instants exactly (Unix seconds and nanoseconds: any
// year) and the zero time apart from the Unix epoch.
func writeTimes(b *strings.Builder, ts ...time.Time) {
	for _, t := range ts {
		if t.IsZero() {
			b.WriteString("z,")
			continue
		}
		writeInts(b, t.Unix(), int64(t.Nanosecond()))
	}
}

// NewCache returns a Cache holding at most max schedules. max <= 0 disables
// caching: every Get parses.
func NewCache(max int) *Cache {
	return &Cache{m: make(map[cacheKey]Schedule), max: max}
}

// Get returns the cached Schedule for s, parsing (and caching) it on a miss.
// Errors are not cached.
func (c *Cache) Get(s Spec) (Schedule, error) {
	k := keyOf(s)
	c.mu.RLock()
	sch, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return sch, nil
	}
	sch, err := Parse(s)
	if err != nil || c.max <= 0 {
		return sch, err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = sch
	c.mu.Unlock()
	return sch, nil
}

// Len returns the number of cached schedules.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
