//go:build !race

package store

// watchdogScale: see race_on_test.go.
const watchdogScale = 1
