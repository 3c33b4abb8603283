//go:build race

package timebound

// Factor is what Scaled multiplies a bound by: 10 under the race detector,
// the middle of its 2-20× slowdown with room for a second binary beside it.
const Factor = 10
