package clients

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// TestSaramaConsumersDetachRecords: every consumer config copies a record's
// key, value and headers out of the fetch response before buffering it (a
// slice of the response would keep the whole response, every partition's
// records, in memory), keeps a nil value nil (a tombstone) and bounds a
// fetch response by FetchBytes.
func TestSaramaConsumersDetachRecords(t *testing.T) {
	c := Default("b:1")
	c.FetchBytes = 4 << 20
	s := c.Sarama()
	require.EqualValues(t, 4<<20, s.Consumer.Fetch.MaxBytes)
	require.NotEmpty(t, s.Consumer.Interceptors)

	response := []byte("kkkkvvvvvvvvhhhhHHHH")
	msg := &sarama.ConsumerMessage{Key: response[0:4], Value: response[4:12],
		Headers: []*sarama.RecordHeader{{Key: response[12:16], Value: response[16:20]}}}
	for _, i := range s.Consumer.Interceptors {
		i.OnConsume(msg)
	}
	for i := range response {
		response[i] = 'x' // the response buffer is reused or freed
	}
	require.Equal(t, "kkkk", string(msg.Key))
	require.Equal(t, "vvvvvvvv", string(msg.Value))
	require.Equal(t, "hhhh", string(msg.Headers[0].Key))
	require.Equal(t, "HHHH", string(msg.Headers[0].Value))

	tomb := &sarama.ConsumerMessage{Key: []byte("k")}
	for _, i := range s.Consumer.Interceptors {
		i.OnConsume(tomb)
	}
	require.Nil(t, tomb.Value, "a tombstone stays a tombstone")

	require.Zero(t, Default("b:1").Sarama().Consumer.Fetch.MaxBytes-sarama.NewConfig().Consumer.Fetch.MaxBytes, "FetchBytes 0 keeps sarama's default")
}
