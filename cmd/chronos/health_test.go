package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/api"
)

func TestHealthProbesHealthzAndReadyz(t *testing.T) {
	t.Parallel()
	ready := errors.New("group chronos-scheduler is recovering")
	srv := httptest.NewServer((&api.Server{Producer: nil, Ready: func() error { return ready }}).Handler())
	t.Cleanup(srv.Close)
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"health", "--addr", srv.URL}, args...))
		err := root.Execute()
		return out.String(), err
	}
	out, err := run()
	require.NoError(t, err)
	require.Contains(t, out, "ok")
	_, err = run("--ready")
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.code)
	require.Contains(t, err.Error(), "recovering")

	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	root := newRoot()
	root.SetArgs([]string{"health", "--addr", dead.URL})
	require.ErrorAs(t, root.Execute(), &ee)
}
