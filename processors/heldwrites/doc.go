// Package heldwrites holds no code: its tests run whole instances, and
// processors wired as Chronos wires its groups, while the broker holds or
// fails their writes (table changelog writes failing past sarama's retries, a
// write held at a clean stop or a rebalance, a rejects topic that is slow or
// missing, floods of large records behind a held write), and check that
// commits stay in order, held inputs stay within clients.MaxHeldCommits and
// clients.MaxHeldBytes, rejects within inputs.Policy's bounds, and that
// nothing is lost (docs/reliability.md, rounds 50-55).
package heldwrites
