package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/embedded"
)

func TestTail(t *testing.T) {
	t.Parallel()
	b, err := embedded.Start(embedded.Options{Partitions: 3})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	brokers := strings.Join(b.Addrs(), ",")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	tests := []struct {
		name   string
		prefix string
		args   []string
		code   int // 0: success
	}{
		{"count reached", "", []string{"--count", "3"}, 0},
		{"count not reached by the timeout", "b-", []string{"--count", "5", "--timeout", "2s"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic := tc.prefix + "chronos-dispatch"
			want := make([]string, 3)
			for i := range want {
				want[i] = fmt.Sprintf(`{"fire_id":"%s%d"}`, tc.prefix, i)
				// One key: one partition, so the order is the produce order.
				r := &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(want[i])}
				require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
			}

			args := append([]string{"tail", "--brokers", brokers, "--topic-prefix", tc.prefix, "--from-beginning"}, tc.args...)
			out, err := run(t, args...)
			require.Equal(t, strings.Join(want, "\n")+"\n", out)
			if tc.code == 0 {
				require.NoError(t, err)
				return
			}
			requireExit(t, err, tc.code, "3 of 5")
		})
	}
}
