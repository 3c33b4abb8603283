package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/views"
)

// oneJob is a read model that knows one job.
type oneJob struct{ id string }

func (o oneJob) Get(id string) (*views.Job, error) {
	if id != o.id {
		return nil, views.ErrNotFound
	}
	return &views.Job{ID: id, Version: 1, Status: "active"}, nil
}

func (o oneJob) Version(id string) (uint64, error) {
	if id != o.id {
		return 0, nil
	}
	return 1, nil
}

func (o oneJob) List(string, string, int) ([]views.Summary, string, error) { return nil, "", nil }

// TestJobsOnUnknownOrInvalidIDExitNonZero: pause, resume, fire, delete and
// get of an id the instance does not know exit 1 and send nothing; ids no
// URL path can carry (".", "..") or that break the id rules are refused
// before any request; a known id goes through.
func TestJobsOnUnknownOrInvalidIDExitNonZero(t *testing.T) {
	t.Parallel()
	prod := &fakeProducer{}
	ts := httptest.NewServer((&api.Server{Producer: prod, Jobs: oneJob{id: "known"}}).Handler())
	t.Cleanup(ts.Close)
	for _, op := range []string{"pause", "resume", "fire", "delete", "get"} {
		_, err := run(t, "jobs", "--api", ts.URL, op, "ghost")
		requireExit(t, err, 1, `"ghost"`)
		for _, bad := range []string{".", "..", ""} {
			_, err := run(t, "jobs", "--api", ts.URL, op, bad)
			requireExit(t, err, 1, "job id")
		}
	}
	for _, bad := range []string{".", "a\u202eb", " x", "e\u0301"} {
		_, err := run(t, "jobs", "--api", ts.URL, "put", bad, "--every", "1m")
		requireExit(t, err, 1, "invalid_id")
		_, err = run(t, "jobs", "--api", ts.URL, "pause", bad)
		requireExit(t, err, 1, "invalid_id")
	}
	require.Empty(t, prod.records(), "nothing sent for unknown or invalid ids")
	for _, op := range []string{"pause", "resume", "fire", "delete"} {
		_, err := run(t, "jobs", "--api", ts.URL, op, "known")
		require.NoError(t, err, op)
	}
	require.Len(t, prod.records(), 4)
	out, err := run(t, "jobs", "--api", ts.URL, "get", "known")
	require.NoError(t, err)
	require.Contains(t, out, "known")
}

// TestRejectsCommand prints rejects readably: position, code, reason, and
// key and value quoted so that invisible and direction-changing characters
// show as escapes, with sizes; -o json prints the records as they are.
func TestRejectsCommand(t *testing.T) {
	t.Parallel()
	b, err := embedded.Start(embedded.Options{Partitions: 2})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	at := time.Date(2026, 5, 4, 8, 20, 0, 0, time.UTC)
	big := strings.Repeat("x", 5000)
	recs := []codecs.Reject{
		codecs.RejectOf(&codecs.Error{Code: codecs.CodeInvalidID, Field: "id", Reason: "job id contains invisible format character U+202E"},
			"chronos-jobs", 3, 17, []byte("invoice\u202efdp.exe"), []byte(`{"v":1,"op":"delete"}`), at),
		codecs.RejectOf(&codecs.Error{Code: codecs.CodeTombstone, Reason: "a null value"}, "chronos-jobs", 1, 2, []byte("j"), nil, at),
		codecs.RejectOf(&codecs.Error{Code: codecs.CodeMalformed, Reason: "bad"}, "chronos-jobs", 0, 9, nil, []byte(big), at),
	}
	for _, r := range recs {
		rec := &kgo.Record{Topic: "p.chronos-rejects", Key: []byte("k"), Value: codecs.EncodeReject(r)}
		require.NoError(t, cl.ProduceSync(t.Context(), rec).FirstErr())
	}
	brokers := strings.Join(b.Addrs(), ",")
	out, err := run(t, "rejects", "--brokers", brokers, "--topic-prefix", "p.", "--from-beginning", "--count", "3", "--timeout", "60s")
	require.NoError(t, err)
	require.Contains(t, out, `2026-05-04T08:20:00Z chronos-jobs[3]@17 invalid_id "id": "job id contains invisible format character U+202E"`)
	require.Contains(t, out, `key   "invoice\u202efdp.exe" (17 bytes)`)
	require.NotContains(t, out, "\u202e", "no raw bidi override reaches the terminal")
	require.Contains(t, out, `value "{\"v\":1,\"op\":\"delete\"}" (21 bytes, sha256 `)
	require.Contains(t, out, "tombstone")
	require.Contains(t, out, "value null")
	require.Contains(t, out, "key   null")
	require.Contains(t, out, `"… (5000 bytes, sha256 `)

	out, err = run(t, "rejects", "--brokers", brokers, "--topic-prefix", "p.", "--from-beginning", "--count", "3", "-o", "json", "--timeout", "60s")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	for i, l := range lines {
		require.Equal(t, string(codecs.EncodeReject(recs[i])), l)
	}
}
