// Package brokerfaults makes the embedded broker (franz-go's kfake) fail
// chosen produce batches, as a broker losing its in-sync replicas or a
// partition's leader would: for tests of what a failed write does to the
// processors. It imports nothing of Chronos, so that any package's tests
// can use it.
package brokerfaults

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Batch is one partition's batch in a produce request.
type Batch struct {
	Topic     string // by name, also when the request names it by id
	Partition int32
	Records   []byte // the record batch as sent (uncompressed records can be searched)
}

// FailProduce makes c answer every produce request holding a batch for
// which code returns an error code other than 0: that batch gets the
// code, and the request's other batches kerr.RequestTimedOut, which
// producers send again. Other requests reach the broker. It returns how
// many requests were answered so. code runs on the broker's goroutine,
// for every batch of every produce request, until the cluster closes.
func FailProduce(c *kfake.Cluster, code func(Batch) int16) *atomic.Int64 {
	answered := new(atomic.Int64)
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		codes := make([][]int16, len(req.Topics))
		hit := false
		for i, tp := range req.Topics {
			topic := TopicName(c, tp)
			codes[i] = make([]int16, len(tp.Partitions))
			for j, p := range tp.Partitions {
				codes[i][j] = code(Batch{Topic: topic, Partition: p.Partition, Records: p.Records})
				hit = hit || codes[i][j] != 0
			}
		}
		if !hit {
			return nil, nil, false
		}
		answered.Add(1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for i, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for j, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = codes[i][j]
				if rp.ErrorCode == 0 {
					rp.ErrorCode = kerr.RequestTimedOut.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return answered
}

// TopicName is the name of a produce request's topic, also when the
// request names it by id (produce v13 and later).
func TopicName(c *kfake.Cluster, tp kmsg.ProduceRequestTopic) string {
	if tp.Topic == "" {
		if info := c.TopicIDInfo(tp.TopicID); info != nil {
			return info.Topic
		}
	}
	return tp.Topic
}
