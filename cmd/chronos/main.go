// Command chronos is the Chronos binary: the scheduler itself (dev, run) and
// its tools (jobs, tail, topics). Every flag also reads CHRONOS_<FLAG>, with
// dashes as underscores (--data-dir reads CHRONOS_DATA_DIR).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil && ee.err.Error() != "" {
				fmt.Fprintln(os.Stderr, "chronos:", ee.err)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "chronos:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "chronos",
		Short:         "Chronos: a Kafka-native job scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			warnSecretFlags(cmd.Flags(), cmd.ErrOrStderr())
			return bindEnv(cmd.Flags())
		},
	}
	root.AddCommand(newDev(), newRun(), newJobs(), newTrigger(), newTail(), newRejects(), newTopics(), newBench(), newLag(), newHealth(), newTokens(), newHistory(), newCalendars())
	return root
}

// EnvName is the environment variable a flag reads: CHRONOS_ + upper-case
// name with dashes as underscores.
func EnvName(flag string) string {
	return "CHRONOS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// secretFlags are the flags that hold a secret, with what to use instead.
var secretFlags = map[string]string{
	"api-token":     "CHRONOS_API_TOKEN (an instance: --tokens-file)",
	"sasl-password": "CHRONOS_SASL_PASSWORD or --sasl-password-file",
}

// warnSecretFlags warns about every secret given on the command line, where
// every user of the host can read it (ps, /proc/<pid>/cmdline) and shell
// histories keep it. Call it before bindEnv, which marks flags set from the
// environment as changed too.
func warnSecretFlags(fs *pflag.FlagSet, w io.Writer) {
	fs.VisitAll(func(f *pflag.Flag) {
		if alt, ok := secretFlags[f.Name]; ok && f.Changed {
			fmt.Fprintf(w, "chronos: warning: --%s on the command line is visible to every user of this host (ps) and kept in shell history; use %s\n", f.Name, alt)
		}
	})
}

// bindEnv sets every flag not given on the command line from its
// environment variable, if set.
func bindEnv(fs *pflag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}
