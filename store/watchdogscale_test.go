package store

import "github.com/chronos-scheduler/chronos/testenv/timebound"

// watchdogScale stretches the bounds of the tests that tell a stuck store
// from a slow one (watchdogs, waits for Close or MarkRecovered) in a binary
// with the race detector, which runs them several times slower:
// TestAdv60OpenCloseLeavesNoGateLoop took 34 s of its 50 under -race on an
// idle machine, and over 50 in CI's race step beside other packages
// (2026-12-07), where it was not stuck. 10 under -race, 1 otherwise
// (testenv/timebound).
const watchdogScale = timebound.Factor
