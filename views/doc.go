// Package views holds the read side of Chronos: Jobs, a goka View over the
// scheduler's job table kept in local Pebble stores (with a bucket index),
// and the read model it serves (Job, Summary, the list cursor). Package api
// serves it over HTTP; the write side (commands) does not pass through here.
package views
