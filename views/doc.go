// Package views serves Chronos over HTTP: the job write API (which validates
// with the same code as the scheduler and produces commands to chronos-jobs),
// health and readiness, and /metrics.
//
// Errors are application/problem+json (RFC 9457) with the field that is wrong.
package views
