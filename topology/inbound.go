package topology

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// DefaultMaxMessageBytes is Apache Kafka's default message.max.bytes
// (1,048,588): the largest record batch a topic takes when neither it nor
// its broker says otherwise.
const DefaultMaxMessageBytes = 1048588

// Inbound lists the topics of l that others write: commands, bucket
// triggers and executors' results. Their records are as large as their
// writers make them, up to the topic's max.message.bytes.
func (l Layout) Inbound() []string {
	return []string{string(l.Jobs()), string(l.BucketTriggers()), string(l.Results())}
}

// InboundRecordLimit reports the largest record batch the brokers accept on
// any inbound topic of l (their effective max.message.bytes), and so the
// largest record a consumer of those topics can be handed:
// DefaultMaxMessageBytes where the brokers report none.
func (l Layout) InboundRecordLimit(ctx context.Context, adm *kadm.Client) (int, error) {
	rs, err := adm.DescribeTopicConfigs(ctx, l.Inbound()...)
	if err != nil {
		return 0, fmt.Errorf("topology: describing the inbound topics' configuration: %w", err)
	}
	limit := 0
	for _, name := range l.Inbound() {
		rc, err := rs.On(name, nil)
		if err != nil || rc.Err != nil {
			return 0, fmt.Errorf("topology: describing %s's configuration: %w", name, errors.Join(err, rc.Err))
		}
		n := DefaultMaxMessageBytes
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			v, err := strconv.Atoi(*c.Value)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("topology: %s has max.message.bytes %q, want a positive number", name, *c.Value)
			}
			n = v
		}
		limit = max(limit, n)
	}
	return limit, nil
}
