package clients

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronos-scheduler/chronos/testenv/timebound"
)

// A coordinator holds a JoinGroup until every member has rejoined or the
// group's rebalance timeout passes. Upstream sarama read that response
// within Net.ReadTimeout: a join held longer timed out, its connection was
// closed, the coordinator's reply was lost, and the next try joined as one
// more member for the group to wait for, so a group with a member that
// died (a killed instance) never formed again (adversary round 35, a crash
// loop of chronos run: docs/reliability.md). The patched sarama
// (third_party/sarama) reads a join within Net.ReadTimeout plus the
// rebalance timeout. Here the read timeout (1 s) is below the rebalance
// timeout the dead member makes the group wait (2 s).
func TestJoinHeldPastTheReadTimeoutCompletes(t *testing.T) {
	const topic, group = "held-join", "held-join-group"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	require.NoError(t, err)
	defer kc.Close()

	// A member that joins, syncs and then dies: it never heartbeats or
	// rejoins again, as a killed process.
	raw, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	require.NoError(t, err)
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	join := func(memberID string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.MemberID = group, memberID
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 2000
		req.ProtocolType = "consumer"
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{topic}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		resp, err := req.RequestWith(ctx, raw)
		require.NoError(t, err)
		return resp
	}
	first := join("")
	require.Equal(t, kerr.MemberIDRequired.Code, first.ErrorCode)
	joined := join(first.MemberID)
	require.Zero(t, joined.ErrorCode)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, joined.Generation, first.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), joined.Protocol
	synced, err := sync.RequestWith(ctx, raw)
	require.NoError(t, err)
	require.Zero(t, synced.ErrorCode)

	cfg := Default(kc.ListenAddrs()[0]).clientSarama()
	cfg.Net.ReadTimeout = time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 3 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Rebalance.Strategy = nil
	cg, err := sarama.NewConsumerGroup(kc.ListenAddrs(), group, cfg)
	require.NoError(t, err)
	defer cg.Close()

	h := &claimed{got: make(chan map[string][]int32, 1)}
	var errs []error
	// Well before the dead member's session (60 s) expires: upstream sarama
	// joined only then.
	deadline := time.Now().Add(timebound.Scaled(15 * time.Second))
	for time.Now().Before(deadline) {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		go func() {
			select {
			case <-h.got:
				ccancel()
			case <-cctx.Done():
			}
		}()
		err := cg.Consume(cctx, []string{topic}, h)
		ccancel()
		if h.claims != nil {
			break
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	require.NotNil(t, h.claims, "the live member never got its partitions; its tries failed with %v", errs)
	require.Len(t, h.claims[topic], 2, "the dead member was removed and the live one holds every partition")
}

type claimed struct {
	got    chan map[string][]int32
	claims map[string][]int32
}

func (h *claimed) Setup(s sarama.ConsumerGroupSession) error {
	h.claims = s.Claims()
	h.got <- h.claims
	return nil
}
func (h *claimed) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *claimed) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}
