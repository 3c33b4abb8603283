//go:build race

package main

// raceEnabled: this test binary has the race detector, whose shadow memory
// would dominate a process's RSS.
const raceEnabled = true
