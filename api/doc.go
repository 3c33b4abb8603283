// Package api serves Chronos over HTTP: the job write API (which validates
// with the same code as the scheduler and produces commands to chronos-jobs),
// the read API over the job view of package views, health and readiness,
// and /metrics.
//
// Who may do what is decided in one place, Server.api: the Origin check,
// the bearer token (Tokens: named, hashed, with a role and an optional
// job-id prefix), the role the route needs, the prefix, and Content-Type
// on writes. Every command carries its token's name in ActorHeader. The
// Host check and the security headers wrap every route. NewHTTPServer adds
// the timeouts and the connection limit.
//
// Errors are application/problem+json (RFC 9457) with the field that is wrong.
package api
