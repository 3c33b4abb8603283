package clients

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/codecs"
)

// TestSaramaConsumersMarkCutHeaders: every consumer config replaces the
// headers of a record the patched decoder cut (more than
// sarama.MaxRecordHeaders) with codecs.DroppedHeadersHeader holding the
// record's header count, leaves other records as they are (a tombstone
// stays a tombstone), and bounds a fetch response by FetchBytes.
func TestSaramaConsumersMarkCutHeaders(t *testing.T) {
	require.Equal(t, codecs.MaxHeaders, sarama.MaxRecordHeaders)
	c := Default("b:1")
	c.FetchBytes = 4 << 20
	s := c.Sarama()
	require.EqualValues(t, 4<<20, s.Consumer.Fetch.MaxBytes)
	apply := func(m *sarama.ConsumerMessage) {
		for _, i := range s.Consumer.Interceptors {
			i.OnConsume(m)
		}
	}
	kept := make([]*sarama.RecordHeader, sarama.MaxRecordHeaders)
	for i := range kept {
		kept[i] = &sarama.RecordHeader{Key: []byte("h"), Value: []byte("v")}
	}
	cut := &sarama.ConsumerMessage{Key: []byte("k"), Value: []byte("{}"), Headers: kept, DroppedHeaders: 1000}
	apply(cut)
	require.Len(t, cut.Headers, 1)
	require.Equal(t, codecs.DroppedHeadersHeader, string(cut.Headers[0].Key))
	require.Equal(t, "1064", string(cut.Headers[0].Value))
	require.Equal(t, "{}", string(cut.Value))
	require.Error(t, codecs.CheckHeaders(map[string][]byte{string(cut.Headers[0].Key): cut.Headers[0].Value}))

	whole := &sarama.ConsumerMessage{Key: []byte("k"), Headers: kept}
	apply(whole)
	require.Len(t, whole.Headers, sarama.MaxRecordHeaders)
	require.Nil(t, whole.Value, "a tombstone stays a tombstone")

	require.Zero(t, Default("b:1").Sarama().Consumer.Fetch.MaxBytes-sarama.NewConfig().Consumer.Fetch.MaxBytes, "FetchBytes 0 keeps sarama's default")
}
