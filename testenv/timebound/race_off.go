//go:build !race

package timebound

// Factor is what Scaled multiplies a bound by: 1 without the race detector.
const Factor = 1
