// Package processors holds the goka processor groups of Chronos, one package
// each (scheduler, clock, router) plus the input policy they share (inputs).
// The tests in this directory run whole instances (package instance) on a
// broker from testenv: end-to-end behaviour, faults and reliability.
package processors
