package instance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/testenv"
)

// TestDeletedTableTopicIsNotRecreated: a running instance whose scheduler
// table topic an operator deletes stops being ready and does not recreate
// the topic (goka's own topic manager recreated it silently with the
// broker's default partition count, and fires went on over an empty
// changelog: adversary round 23, docs/operations.md).
func TestDeletedTableTopicIsNotRecreated(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, 4)
	inst := env.Start(env.Config())
	table := string(env.Layout.SchedulerTable())
	adm := kadm.NewClient(env.Client)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, table)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	env.Tick(t0)
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		env.Put(id, codecs.JobDef{Every: "10s"}, t0)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		if inst.Ready() == nil {
			return errors.New("still ready")
		}
		return nil
	})
	time.Sleep(5 * time.Second) // the scheduler group restarts meanwhile
	require.Error(t, inst.Ready(), "ready again without its table topic")
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.False(t, topics.Has(table), "the deleted table topic was recreated: %v", topics.TopicsList())
}
