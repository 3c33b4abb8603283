//go:build sim && !race

package scheduler

const simRace = false
