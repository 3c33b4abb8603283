// Package codecs defines the wire formats of every Chronos topic and of the
// scheduler's table records.
//
// External topics (chronos-jobs, chronos-bucket-triggers, chronos-dispatch,
// chronos-rejects) carry versioned JSON documented in docs/topics.md, so
// producers and consumers in any language need no Chronos code. Internal
// topics (clock ticks, shard triggers, loopback) carry small JSON messages.
// Table records use a compact binary encoding (record.go).
//
// Decoders never panic on any input; they return *Error with a stable Code.
package codecs
