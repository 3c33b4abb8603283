//go:build adversary18b

package instance_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestAdv18bOversizedRecordsOverflowFetchBuffer breaks the bound of
// docs/configuration.md ("Memory", --fetch-buffer-bytes): "each consumer
// holds at most --fetch-buffer-bytes (default 4 MiB) per partition". The
// record count is derived from --max-payload (63 records at the default
// 64 KiB), but anyone with Write on chronos-jobs or chronos-bucket-triggers
// may produce records up to the broker's max.message.bytes (about 1 MB).
// Such a record is rejected (payload_too_large) only after a consumer
// fetched and buffered it, so while a partition's callback is busy (a
// fan-out callback runs up to --fanout-budget, 500 ms) its buffer fills
// with 63 records of 1 MB: 16 times the bound, per partition and per
// consumer reading a topic others write (the scheduler on chronos-jobs,
// the router on chronos-bucket-triggers).
//
// The test reads the partition with the sarama configuration every goka
// consumer of an instance gets (instance defaults: 4 MiB, 64 KiB
// payloads), does not take records from it, as a callback that is busy
// does not, waits until the consumer's buffer is full, and compares what
// it holds with the bound.
//
// Run: go test -tags adversary18b -count=1 -run TestAdv18bOversizedRecordsOverflowFetchBuffer -v ./instance/
// (and with CHRONOS_TEST_BROKERS=host:port on Apache Kafka).
func TestAdv18bOversizedRecordsOverflowFetchBuffer(t *testing.T) {
	const recordBytes = 990_000
	tenv := testenv.New(t, 1)
	cfg := instance.Default()
	kc := tenv.Kafka
	kc.FetchBuffer = instance.FetchBufferRecords(cfg.FetchBufferBytes, cfg.Limits.MaxPayload)
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
