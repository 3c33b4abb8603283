//go:build !race

package timebound

const raceEnabled = false
