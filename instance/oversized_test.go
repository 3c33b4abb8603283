package instance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestOversizedRecordsFitFetchBuffer: docs/configuration.md ("Memory",
// --fetch-buffer-bytes) promises "each consumer holds at most
// --fetch-buffer-bytes (default 4 MiB) per partition". Anyone with Write on
// chronos-jobs or chronos-bucket-triggers may produce records up to the
// broker's max.message.bytes (about 1 MB), rejected (payload_too_large) only
// after a consumer fetched and buffered them, so while a partition's
// callback is busy (a fan-out callback runs up to --fanout-budget) its
// buffer fills with them. Found by an adversary round (issue 18): with the
// count taken at --max-payload (63 records at 64 KiB), a consumer held
// 59.5 MiB on one partition.
//
// The test reads the partition with the sarama configuration every goka
// consumer of an instance gets (instance.ConsumerFetchBuffer, defaults),
// does not take records from it, as a callback that is busy does not, waits
// until the consumer's buffer is full, and compares what it holds with the
// bound. It runs on Apache Kafka with CHRONOS_TEST_BROKERS set.
func TestOversizedRecordsFitFetchBuffer(t *testing.T) {
	const recordBytes = 990_000
	tenv := testenv.New(t, 1)
	cfg := instance.Default()
	kc := tenv.Kafka
	cfg.Layout = tenv.Layout
	var err error
	kc.FetchBuffer, err = instance.ConsumerFetchBuffer(context.Background(), cfg, kadm.NewClient(tenv.Client))
	require.NoError(t, err)
	n := kc.FetchBuffer + 8 // more than the buffer holds
	ids := make([]string, n)
	puts := make([][]byte, n)
	big := make([]byte, recordBytes)
	for j := range big {
		big[j] = 'a' + byte(j%26)
	}
	payload := []byte(`"` + string(big) + `"`) // 15 times --max-payload
	for i := range n {
		ids[i] = fmt.Sprintf("oversized-%03d", i)
		puts[i] = testenv.PutCommand(ids[i], codecs.JobDef{Cron: "0 0 1 1 *", Payload: payload})
	}
	for i := range n {
		tenv.ProduceMany(string(tenv.Layout.Jobs()), ids[i:i+1], puts[i:i+1], time.Now())
	}

	c, err := sarama.NewConsumer(kc.Brokers, kc.Sarama())
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(string(tenv.Layout.Jobs()), 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.AsyncClose()
	testenv.Eventually(t, time.Minute, func() error {
		if got := len(pc.Messages()); got < cap(pc.Messages()) {
			return fmt.Errorf("%d of %d records buffered", got, cap(pc.Messages()))
		}
		return nil
	})
	held := len(pc.Messages()) * len(puts[0])
	t.Logf("a consumer buffers %d records of %d bytes on one partition: %.1f MiB held, bound %.1f MiB",
		len(pc.Messages()), len(puts[0]), float64(held)/(1<<20), float64(cfg.FetchBufferBytes)/(1<<20))
	require.LessOrEqual(t, held, cfg.FetchBufferBytes, "a consumer holds more than --fetch-buffer-bytes on one partition")
}
