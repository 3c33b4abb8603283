package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/topology"
)

// TestInboundRecordLimit: the limit is the brokers' default until an
// operator raises max.message.bytes on one inbound topic, and then the
// largest of the inbound topics'; the other topics do not count.
func TestInboundRecordLimit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newAdm := newAdmin(t)
	l := topology.Layout{Names: topology.Names{Prefix: "in."}, Partitions: 2, Replication: 1}
	require.NoError(t, l.Ensure(ctx, newAdm()))

	got, err := l.InboundRecordLimit(ctx, newAdm())
	require.NoError(t, err)
	require.Equal(t, topology.DefaultMaxMessageBytes, got)

	set := func(topic string, v string) {
		rs, err := newAdm().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr(v)}}, topic)
		require.NoError(t, err)
		r, err := rs.On(topic, nil)
		require.NoError(t, err)
		require.NoError(t, r.Err)
	}
	set(string(l.Dispatch()), "8388608") // not inbound: no effect
	set(string(l.BucketTriggers()), "2097152")
	got, err = l.InboundRecordLimit(ctx, newAdm())
	require.NoError(t, err)
	require.Equal(t, 2097152, got)
}
