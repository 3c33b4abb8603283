//go:build race

package scheduler

// simRace: the race detector slows the simulation about 30 times, and the
// simulation runs on one goroutine: fewer seeds by default under -race.
const simRace = true
