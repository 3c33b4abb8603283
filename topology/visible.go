package topology

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
)

// EnsureVisible creates the layout's missing topics and waits until the
// brokers report every one of them, with all its partitions, in a fresh
// sarama metadata request (what goka itself uses): Kafka acknowledges a
// creation before its brokers serve the topic, and goka fails on a topic it
// cannot see. It retries every 500 ms for at most 60 s (or until ctx ends).
// sc configures the sarama client of the check (TLS, SASL).
func (l Layout) EnsureVisible(ctx context.Context, adm *kadm.Client, brokers []string, sc *sarama.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var err error
	for {
		if err = l.Ensure(ctx, adm); err == nil {
			if err = l.visible(brokers, sc); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topology: creating topics: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// visible checks once that every topic of l has its partitions.
func (l Layout) visible(brokers []string, cfg *sarama.Config) error {
	sc, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return err
	}
	defer sc.Close()
	var names []string
	for _, t := range l.Topics() {
		names = append(names, t.Name)
	}
	if err := sc.RefreshMetadata(names...); err != nil {
		return err
	}
	for _, t := range l.Topics() {
		ps, err := sc.Partitions(t.Name)
		if err != nil {
			return fmt.Errorf("topology: topic %s is not visible yet: %w", t.Name, err)
		}
		if int32(len(ps)) != t.Partitions {
			return fmt.Errorf("topology: topic %s shows %d of %d partitions", t.Name, len(ps), t.Partitions)
		}
	}
	return nil
}
