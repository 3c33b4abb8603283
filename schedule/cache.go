package schedule

import "sync"

// Cache is a bounded cache of parsed schedules keyed by Spec (all fields),
// safe for concurrent use. When it holds max entries, the next insertion
// drops everything first. Only successful parses are cached.
//
// Keys compare time.Time fields with ==, so the same instant in a different
// *time.Location (or with a monotonic reading) is a different key; that only
// costs a cache miss.
type Cache struct {
	mu  sync.RWMutex
	m   map[Spec]Schedule
	max int
}

// NewCache returns a Cache holding at most max schedules. max <= 0 disables
// caching: every Get parses.
func NewCache(max int) *Cache {
	return &Cache{m: make(map[Spec]Schedule), max: max}
}

// Get returns the cached Schedule for s, parsing (and caching) it on a miss.
// Errors are not cached.
func (c *Cache) Get(s Spec) (Schedule, error) {
	c.mu.RLock()
	sch, ok := c.m[s]
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
	c.m[s] = sch
	c.mu.Unlock()
	return sch, nil
}

// Len returns the number of cached schedules.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
