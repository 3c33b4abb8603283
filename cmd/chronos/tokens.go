package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-scheduler/chronos/views"
)

// authFlags are the API's access settings of an instance (docs/security.md).
type authFlags struct {
	tokensFile string
	insecure   bool
	origins    []string
	hosts      []string
	probeAddr  string
}

func (a *authFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.tokensFile, "tokens-file", "", "file of named, hashed API tokens with roles and prefixes (make lines with `chronos tokens new`)")
	fs.BoolVar(&a.insecure, "insecure-no-auth", false, "serve the API without credentials to anyone who reaches --http-addr (INSECURE)")
	fs.StringSliceVar(&a.origins, "allowed-origins", nil, "browser origins besides the API's own allowed to call /v1, like https://ops.example.com")
	fs.StringSliceVar(&a.hosts, "allowed-hosts", nil, "Host header values the API answers, like chronos.example.com (default: on loopback localhost, 127.0.0.1 and [::1] with the port; elsewhere any)")
	fs.StringVar(&a.probeAddr, "probe-addr", "", "also serve /healthz, /readyz and /metrics on this address, apart from the API's connections (empty: off)")
}

// tokens loads --tokens-file (nil without one).
func (a *authFlags) tokens() (*views.Tokens, error) {
	if a.tokensFile == "" {
		return nil, nil
	}
	return views.LoadTokens(a.tokensFile)
}

// errNoCredentials is why `run` refuses to start without credentials.
var errNoCredentials = errors.New("the HTTP API has no credentials: give --tokens-file (make tokens with `chronos tokens new`) " +
	"or CHRONOS_API_TOKEN, or pass --insecure-no-auth to let anyone who reaches --http-addr create, change and fire jobs")

// check validates the access settings before anything starts: run
// (required) refuses to start without credentials unless --insecure-no-auth;
// any instance warns when it serves the API without credentials beyond
// loopback.
func (a *authFlags) check(httpAddr, apiToken string, required bool, log *slog.Logger) error {
	hasCreds := a.tokensFile != "" || apiToken != ""
	switch {
	case hasCreds && a.insecure:
		return errors.New("--insecure-no-auth with credentials (--tokens-file or --api-token): choose one")
	case !hasCreds && required && !a.insecure:
		return errNoCredentials
	}
	if _, err := a.tokens(); err != nil {
		return err
	}
	if apiToken != "" {
		log.Warn("--api-token (CHRONOS_API_TOKEN) is deprecated: one unnamed admin token; use --tokens-file for named tokens with roles")
	}
	if !hasCreds && views.LoopbackHosts(httpAddr) == nil {
		log.Warn("WARNING: the HTTP API listens beyond loopback WITHOUT CREDENTIALS: anyone who reaches it can create, change and fire jobs; "+
			"give --tokens-file or bind --http-addr to 127.0.0.1", "http_addr", httpAddr)
	}
	return nil
}

// allowedHosts returns the Host values an API listening on addr answers
// (nil: any).
func (a *authFlags) allowedHosts(addr string) []string {
	if len(a.hosts) == 0 {
		return views.LoopbackHosts(addr)
	}
	hosts := make([]string, len(a.hosts))
	for i, h := range a.hosts {
		hosts[i] = strings.ToLower(h)
	}
	return hosts
}

// serveProbes serves the probes on --probe-addr until stop is called.
func (a *authFlags) serveProbes(srv *views.Server, opts views.HTTPOptions, log *slog.Logger) (stop func(), err error) {
	if a.probeAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", a.probeAddr)
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	hs := views.NewHTTPServer(srv.ProbeHandler(views.LoopbackHosts(ln.Addr().String())), opts)
	go func() { _ = hs.Serve(ln) }()
	log.Info("serving probes", "probes", "http://"+ln.Addr().String())
	return func() { _ = hs.Close() }, nil
}

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
			r, err := views.ParseRole(role)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			secret, line, err := views.NewToken(name, r, prefix)
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
	fs.StringVar(&appendTo, "append", "", "also append the line to this tokens file (created with mode 0600), checking the result")
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
	if _, err := views.ParseTokens(io.MultiReader(bytes.NewReader(old), bytes.NewReader([]byte(line+"\n")))); err != nil {
		return fmt.Errorf("%s: %w", path, err)
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
