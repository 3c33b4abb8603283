//go:build race

package timebound

const raceEnabled = true
