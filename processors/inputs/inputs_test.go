package inputs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chronos-scheduler/chronos/processors/inputs"
)

func TestDropReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		reason string
		final  bool
	}{
		{kerr.UnknownTopicOrPartition, inputs.DropTopicMissing, false},
		{fmt.Errorf("producing: %w", kerr.TopicAuthorizationFailed), inputs.DropDenied, true},
		{kerr.ClusterAuthorizationFailed, inputs.DropDenied, true},
		{kerr.MessageTooLarge, inputs.DropTooLarge, true},
		{kerr.RecordListTooLarge, inputs.DropTooLarge, true},
		{context.DeadlineExceeded, inputs.DropFailed, false},
		{errors.New("connection refused"), inputs.DropFailed, false},
	} {
		reason, final := inputs.DropReason(tc.err)
		require.Equal(t, tc.reason, reason, "%v", tc.err)
		require.Equal(t, tc.final, final, "%v", tc.err)
	}
}
