package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// testClockEnv names the hidden, test-only setting that shifts this
// instance's clock (its ticks, fired_at and readiness) by a duration, so a
// fault test can skew or jump one instance's wall clock. It is not a flag and
// not part of the documented configuration: production never sets it.
//
//	CHRONOS_TEST_CLOCK_OFFSET=-90s       a fixed offset
//	CHRONOS_TEST_CLOCK_OFFSET=@/path     the offset is the duration in the file,
//	                                     re-read at most every 100 ms (a jump while running);
//	                                     a missing or empty file means 0
const testClockEnv = "CHRONOS_TEST_CLOCK_OFFSET"

// testClock returns the instance's clock when testClockEnv is set, and nil
// (the real clock) when it is not.
func testClock(log *slog.Logger) (func() time.Time, error) {
	v := os.Getenv(testClockEnv)
	if v == "" {
		return nil, nil
	}
	if path, ok := strings.CutPrefix(v, "@"); ok {
		log.Warn("TEST ONLY: the clock follows an offset file", "env", testClockEnv, "file", path)
		c := &fileOffsetClock{path: path}
		return c.now, nil
	}
	off, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", testClockEnv, v, err)
	}
	log.Warn("TEST ONLY: the clock is shifted", "env", testClockEnv, "offset", off)
	return func() time.Time { return time.Now().Add(off) }, nil
}

// fileOffsetClock is the real clock plus the duration held in a file. Safe
// for concurrent use.
type fileOffsetClock struct {
	path string
	mu   sync.Mutex
	off  time.Duration
	next time.Time // when to read the file again
}

func (c *fileOffsetClock) now() time.Time {
	n := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !n.Before(c.next) {
		c.next = n.Add(100 * time.Millisecond)
		c.off = 0
		if b, err := os.ReadFile(c.path); err == nil {
			if d, err := time.ParseDuration(string(bytes.TrimSpace(b))); err == nil {
				c.off = d
			}
		}
	}
	return n.Add(c.off)
}
