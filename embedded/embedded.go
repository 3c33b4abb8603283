// Package embedded runs an in-process Kafka-protocol broker (franz-go's
// kfake) for `chronos dev` and for tests: one broker, persisted under a data
// directory when one is given.
//
// It is a fake: no replication (acks=all equals acks=1), and behaviour can
// differ from Apache Kafka in corners; docs/operations.md lists what we know.
package embedded

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is a running embedded broker. Close stops it; safe to call twice.
type Broker struct {
	c *kfake.Cluster
}

// Options configure Start. The zero value is an in-memory broker on a random
// loopback port.
type Options struct {
	// Addr is host:port to listen on (default "127.0.0.1:0", a free port).
	// kfake listens on 127.0.0.1; only the port of Addr is used.
	Addr string
	// DataDir persists topics, offsets and groups across restarts ("" = memory only).
	DataDir string
	// SyncWrites fsyncs every produced batch (default false, like Kafka's
	// default flush policy: a machine crash may lose the newest batches, a
	// process crash loses nothing already written).
	SyncWrites bool
	// Partitions is the default partition count of auto-created topics (default 12).
	Partitions int32
	// MaxRequestBytes is the largest request frame a client may send
	// (default DefaultMaxRequestBytes, 100 MiB); a connection declaring a
	// larger one is closed before the broker allocates it.
	MaxRequestBytes uint32
}

// Start starts a broker.
func Start(o Options) (*Broker, error) {
	port := 0
	if o.Addr != "" {
		host, p, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("embedded: address %q: %w", o.Addr, err)
		}
		if host != "" && host != "127.0.0.1" && host != "localhost" {
			return nil, fmt.Errorf("embedded: address %q: the embedded broker listens on 127.0.0.1 only", o.Addr)
		}
		if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("embedded: address %q: bad port", o.Addr)
		}
	}
	parts := o.Partitions
	if parts == 0 {
		parts = 12
	}
	maxReq := o.MaxRequestBytes
	if maxReq == 0 {
		maxReq = DefaultMaxRequestBytes
	}
	opts := []kfake.Opt{
		kfake.ListenFn(capListen(maxReq)),
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DefaultNumPartitions(int(parts)),
		kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(map[string]string{"default.replication.factor": "1"}),
	}
	if o.DataDir != "" {
		opts = append(opts, kfake.DataDir(o.DataDir))
	}
	if o.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: starting broker: %w", err)
	}
	guardProduce(c, DefaultMaxInflatedBatchBytes, int(maxReq))
	return &Broker{c: c}, nil
}

// Addrs returns the broker's listen addresses.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Cluster exposes the kfake cluster (fault injection in tests).
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Close stops the broker, persisting its state when it has a data dir.
func (b *Broker) Close() {
	if b != nil && b.c != nil {
		b.c.Close()
	}
}
