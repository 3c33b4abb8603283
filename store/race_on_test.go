//go:build race

package store

// watchdogScale stretches the watchdogs' bounds in a binary with the race
// detector, which runs these tests several times slower (2-20×, Go's
// docs): TestAdv60OpenCloseLeavesNoGateLoop took 34 s of its 50 under
// -race on an idle machine, and over 50 in CI's race step beside other
// packages (2026-12-07), where it was not stuck.
const watchdogScale = 10
