// Package processors holds the goka processor groups of Chronos, one package
// each (scheduler, clock, router) plus the input policy they share (inputs).
// The tests in this directory run whole instances (package instance) on a
// broker from testenv: end-to-end behaviour of commands, schedules, bulk
// operations and backfills. Two directories beside it hold the rest of those
// tests, so that each package fits go test's default 10-minute limit on two
// cores: faults (kill -9, rebalances, the clock's owner lost, broker
// restarts, lost and full disks, each ended by an audit) and heldwrites
// (what an instance does while the broker holds or fails its writes).
package processors
