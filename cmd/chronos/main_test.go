package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/topology"
)

// run executes a fresh root command with args and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := runErr(t, args...)
	if errOut != "" {
		t.Logf("stderr of %v:\n%s", args, errOut)
	}
	return out, err
}

// runErr is run that also returns what the command printed on stderr.
func runErr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// requireExit checks that err is an *exitError with code and a message
// containing every one of parts.
func requireExit(t *testing.T, err error, code int, parts ...string) {
	t.Helper()
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, code, ee.code, "error: %v", err)
	for _, p := range parts {
		require.Contains(t, ee.Error(), p)
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	tests := []struct{ flag, want string }{
		{"data-dir", "CHRONOS_DATA_DIR"},
		{"brokers", "CHRONOS_BROKERS"},
		{"api-token", "CHRONOS_API_TOKEN"},
		{"from-beginning", "CHRONOS_FROM_BEGINNING"},
		{"misfire-grace", "CHRONOS_MISFIRE_GRACE"},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, EnvName(tc.flag))
		})
	}
}

func TestBindEnv(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("CHRONOS_NAME", "from-env")
	t.Setenv("CHRONOS_COUNT", "5")
	t.Setenv("CHRONOS_LIST", "x,y")
	t.Setenv("CHRONOS_GIVEN", "from-env")
	t.Setenv("CHRONOS_HELP", "true")

	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	name := fs.String("name", "default", "u")
	count := fs.Int("count", 1, "u")
	list := fs.StringSlice("list", []string{"d"}, "u")
	given := fs.String("given", "default", "u")
	untouched := fs.String("untouched", "default", "u")
	fs.Bool("help", false, "u")
	require.NoError(t, fs.Parse([]string{"--given", "from-cli"}))

	require.NoError(t, bindEnv(fs))
	require.Equal(t, "from-env", *name)
	require.Equal(t, 5, *count)
	require.Equal(t, []string{"x", "y"}, *list, "env replaces a slice default rather than appending")
	require.Equal(t, "from-cli", *given)
	require.Equal(t, "default", *untouched)
	help, err := fs.GetBool("help")
	require.NoError(t, err)
	require.False(t, help)
}

func TestBindEnvBadValues(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("CHRONOS_COUNT", "abc")
	t.Setenv("CHRONOS_FLAG", "maybe")

	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.Int("count", 1, "u")
	fs.Bool("flag", false, "u")
	require.NoError(t, fs.Parse(nil))
	err := bindEnv(fs)
	require.Error(t, err)
	require.Contains(t, err.Error(), `CHRONOS_COUNT="abc"`)
	require.Contains(t, err.Error(), `CHRONOS_FLAG="maybe"`)
}

func TestEnvThroughCommands(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("CHRONOS_TOPIC_PREFIX", "env-")

	out, err := run(t, "topics")
	require.NoError(t, err)
	require.Contains(t, out, "env-chronos-jobs\t")

	out, err = run(t, "topics", "--topic-prefix", "cli-")
	require.NoError(t, err)
	require.Contains(t, out, "cli-chronos-jobs\t")
	require.NotContains(t, out, "env-")

	t.Setenv("CHRONOS_PARTITIONS", "abc")
	_, err = run(t, "topics")
	require.Error(t, err)
	require.Contains(t, err.Error(), "CHRONOS_PARTITIONS")

	_, err = run(t, "topics", "--partitions", "3")
	require.NoError(t, err, "a flag given on the command line wins over a bad env value")
}

func TestEnvReachesInheritedFlags(t *testing.T) {
	// t.Setenv: not parallel.
	api := newAPI(t, "tok")
	t.Setenv("CHRONOS_API", api.url)
	t.Setenv("CHRONOS_API_TOKEN", "tok")

	out, err := run(t, "jobs", "delete", "j1")
	require.NoError(t, err)
	require.Contains(t, out, `"op":"delete"`)
	require.Len(t, api.prod.records(), 1)
}

// walk calls fn for cmd and every command below it.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

func TestFlagsDocumentedAndEnvUnique(t *testing.T) {
	t.Parallel()
	var commands int
	walk(newRoot(), func(cmd *cobra.Command) {
		commands++
		env := map[string]string{} // env var -> flag
		check := func(f *pflag.Flag) {
			require.NotEmpty(t, strings.TrimSpace(f.Usage), "%s --%s has no usage", cmd.CommandPath(), f.Name)
			e := EnvName(f.Name)
			if prev, ok := env[e]; ok && prev != f.Name {
				t.Errorf("%s: --%s and --%s both read %s", cmd.CommandPath(), prev, f.Name, e)
			}
			env[e] = f.Name
		}
		cmd.Flags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		cmd.InheritedFlags().VisitAll(check)
	})
	require.GreaterOrEqual(t, commands, 11, "root, dev, run, jobs (+5), tail, topics")
}

func TestTopics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		layout topology.Layout
	}{
		{"defaults", nil, topology.Layout{Partitions: topology.DefaultPartitions, Replication: -1}},
		{"prefix and partitions", []string{"--topic-prefix", "acme-", "--partitions", "3"},
			topology.Layout{Names: topology.Names{Prefix: "acme-"}, Partitions: 3, Replication: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := run(t, append([]string{"topics"}, tc.args...)...)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, len(tc.layout.Topics()))
			for _, topic := range tc.layout.Topics() {
				require.Contains(t, out, topic.Name+"\t")
			}
			require.Contains(t, out, tc.layout.Dispatch()+"\t")
			require.Equal(t, tc.layout.String(), out)
		})
	}

	t.Run("invalid layout", func(t *testing.T) {
		t.Parallel()
		out, err := run(t, "topics", "--partitions", "0")
		require.Error(t, err)
		require.Contains(t, err.Error(), "partitions")
		require.Empty(t, out)
	})
}

func TestExitErrorUnwrapsThroughErrorsAs(t *testing.T) {
	t.Parallel()
	err := error(&exitError{code: 3, err: errors.New("boom")})
	requireExit(t, err, 3, "boom")
}

func TestBenchExternalNeedsBrokersAndPrefix(t *testing.T) {
	_, err := run(t, "bench", "--external")
	require.ErrorContains(t, err, "--external needs --brokers")
	_, err = run(t, "bench", "--external", "--brokers", "127.0.0.1:1")
	require.ErrorContains(t, err, "--external needs --topic-prefix")
}
