// Package timebound stretches tests' wall-clock bounds in a binary built
// with the race detector.
//
// A bound on how long a test waits (for a group join, a record, a stop)
// tells a stuck run from a slow one only if the slow one fits in it. The
// race detector runs code 2-20 times slower (Go's docs), and CI's race step
// runs two test binaries at once on two cores: a watchdog of 50 s fired on a
// test that took 34 s alone under -race and was running, not stuck
// (reliability.md, 2026-12-07). Scaled gives such a bound room there and
// leaves it as written elsewhere, where it also bounds how long a failing
// run takes to say so.
package timebound

import "time"

// Scaled returns d, or d times Factor in a binary built with -race.
func Scaled(d time.Duration) time.Duration { return d * Factor }
