// Package soak is a randomized fault soak of Chronos on Apache Kafka.
//
// Run starts an Apache Kafka broker (testenv/kafka/kafka.sh), three
// `chronos run` subprocesses (the built binary, each with its own data dir
// and HTTP port on 127.0.0.1) and a steady load: recurring jobs firing every
// 1 s, 5 s and 10 s plus a stream of one-shot jobs, all produced straight to
// chronos-jobs with the documented partitioner. While the load runs, a
// schedule drawn from a seeded random source injects faults one after the
// other (see Kind): kill -9 and restart, SIGSTOP past the consumer group's
// session timeout then SIGCONT, scale up and down, a broker restart that
// keeps its log dir, clock jumps of one instance (through the test-only
// CHRONOS_TEST_CLOCK_OFFSET of cmd/chronos) and poison records on
// chronos-jobs. When the schedule ends every fault is undone and the
// harness audits chronos-dispatch with package audit: every scheduled fire
// in the window must be delivered (missing = 0), repeats are counted, and a
// fire read before its scheduled_at is an early fire.
//
// The seed is printed first; the same seed draws the same faults in the
// same order with the same parameters (targets are picked among the running
// instances, which the same schedule reproduces). Wall-clock timing of
// course differs from run to run.
//
// The test in soak_test.go (build tag soak) drives it:
//
//	go test -tags soak -run TestSoak -timeout 60m ./testenv/soak/ -soak.duration 20m -soak.seed 42
package soak
