//go:build !race

package scheduler

const simRace = false
