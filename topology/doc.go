// Package topology owns the names of Chronos topics and consumer groups, the
// partition count, the creation of missing topics, and the shard-trigger keys
// that address one partition of the scheduler group.
//
// Every message a goka processor consumes must land on the partition goka
// expects: Partition reproduces goka's hasher (FNV-1a 32 through sarama's hash
// partitioner), and Partitioner gives a franz-go producer the same placement.
package topology
