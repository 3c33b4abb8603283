package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/api"
)

func newTokens() *cobra.Command {
	cmd := &cobra.Command{Use: "tokens", Short: "Make API tokens for an instance's --tokens-file"}
	cmd.AddCommand(newTokensNew())
	return cmd
}

func newTokensNew() *cobra.Command {
	var name, role, prefix, appendTo string
	cmd := &cobra.Command{
		Use:   "new --name NAME --role read|write|admin [--prefix PREFIX]",
		Short: "Make a token: print its secret once and its line for the tokens file",
		Long: "Make a token of 256 random bits. The secret is printed once and stored nowhere; the tokens file " +
			"keeps only its SHA-256. A token with --prefix may only read, change and fire jobs whose ids start " +
			"with the prefix, put jobs in buckets that start with it and trigger such buckets.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := api.ParseRole(role)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			secret, line, err := api.NewToken(name, r, prefix)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if appendTo != "" {
				if err := appendToken(appendTo, line); err != nil {
					return &exitError{code: 1, err: err}
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "# secret of token %q: give it to its client (as CHRONOS_API_TOKEN); it is shown only now\n%s\n", name, secret)
			if appendTo != "" {
				fmt.Fprintf(out, "# added to %s:\n%s\n", appendTo, line)
			} else {
				fmt.Fprintf(out, "# line for the instances' --tokens-file:\n%s\n", line)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&name, "name", "", "token name, recorded in the chronos-actor header of every command it sends (letters, digits, . _ -)")
	fs.StringVar(&role, "role", "", "read (get, list), write (also put, delete, pause, resume, fire, trigger) or admin")
	fs.StringVar(&prefix, "prefix", "", "confine the token to job ids and buckets starting with this prefix (a tenant)")
	fs.StringVar(&appendTo, "append", "", "also append the line to this tokens file (created with mode 0600, its directory with 0700), checking the result")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

// appendToken appends line to a tokens file after checking that the file
// with it still parses (names and secrets unique).
func appendToken(path, line string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		line = "\n" + line
	}
	if _, err := api.ParseTokens(io.MultiReader(bytes.NewReader(old), bytes.NewReader([]byte(line+"\n")))); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// A new file's directory is made too (0700: it names who may do what).
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, line+"\n"); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
