// Command ghsim runs the GitHub simulator (internal/ghsim) standalone, for `make demo` and manual
// testing: the REST API, OAuth device flow and webhooks on one loopback port, plus the admin API
// under /_ghsim/admin/ (see docs/simulator.md). It never contacts the real GitHub.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/readiness"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ghsim:", err)
		os.Exit(1)
	}
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// run serves until ctx ends. It prints the API URL (and what it created) to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ghsim", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8787", "address to serve on (port 0 picks a free port)")
	var orgs, repos listFlag
	fs.Var(&orgs, "org", "organization to create (repeatable)")
	fs.Var(&repos, "repo", "repository owner/name to create (repeatable)")
	tokenFile := fs.String("token-file", "", "write a valid token for the created repositories here (mode 0600)")
	login := fs.String("login", "octocat", "user the --token-file token acts for")
	pkgDir := fs.String("runner-package", "", "build the fake runner package into this directory and serve it from the downloads endpoint")
	clientID := fs.String("oauth-client-id", "Iv1.ghsim", "client_id the device flow accepts")
	fakeClock := fs.Bool("fake-clock", false, "run on a fake clock that only /_ghsim/admin/clock/advance moves")
	rateLimit := fs.Int("rate-limit", 5000, "primary rate limit per token owner per hour")
	var act ghsim.ActionsOptions
	fs.DurationVar(&act.LongPoll, "scaleset-long-poll", 50*time.Second, "how long a scale-set message GET waits before 202")
	fs.DurationVar(&act.SessionExpiry, "scaleset-session-expiry", 10*time.Minute, "how long an unpolled scale-set session blocks a new one (409)")
	fs.BoolVar(&act.GHES, "scaleset-ghes", false, "GHES's scale-set message flow alone (JobAvailable, acquirejobs before assignment), REST at the root")
	fs.BoolVar(&act.CustomLabels, "scaleset-custom-labels", false, "keep a scale set's labels beyond its name and route jobs by every label (GHES 3.18+ custom labels)")
	ghes := fs.Bool("ghes", false, "play GitHub Enterprise Server: REST under /api/v3 and GHES's scale-set message flow")
	points := fs.Int("points-per-minute", 0, "secondary-limit points per account per minute (0: GitHub's 900)")
	latency := fs.Duration("latency", 0, "round-trip latency added to every REST request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := ghsim.Options{Addr: *listen, RateLimit: *rateLimit, Actions: act, GHES: *ghes,
		Limits: ghsim.Limits{PointsPerMinute: *points}, Latency: *latency}
	if *fakeClock {
		opts.Clock = ghsim.NewFakeClock(time.Now())
	}
	srv, err := ghsim.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, o := range orgs {
		srv.CreateOrg(o)
	}
	for _, r := range repos {
		owner, name, ok := strings.Cut(r, "/")
		if !ok || owner == "" || name == "" {
			return fmt.Errorf("--repo %q: want owner/name", r)
		}
		srv.CreateRepo(owner, name)
	}
	srv.CreateOAuthClient(*clientID)
	if *pkgDir != "" {
		if err := os.MkdirAll(*pkgDir, 0o755); err != nil {
			return fmt.Errorf("create --runner-package directory: %w", err)
		}
		pkg, err := ghsim.BuildFakeRunnerPackage(ctx, *pkgDir)
		if err != nil {
			return err
		}
		srv.ServeRunnerPackage(pkg)
		fmt.Fprintf(out, "ghsim: serving runner package %s (sha256 %s)\n", filepath.Base(pkg.Path), pkg.SHA256)
	}
	if *tokenFile != "" {
		if err := writeToken(*tokenFile, srv.AddToken(ghsim.TokenOptions{Login: *login})); err != nil {
			return err
		}
		fmt.Fprintf(out, "ghsim: wrote a token for %s to %s\n", *login, *tokenFile)
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, readiness.SimLine(srv.URL()))
	if *ghes {
		fmt.Fprintf(out, "ghsim: GHES mode: REST API at %s (set github.api_url to it)\n", srv.APIURL())
	}
	<-ctx.Done()
	if err := srv.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// writeToken writes the token atomically with mode 0600, as credential files must be.
func writeToken(path, tok string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ghsim-token-*")
	if err != nil {
		return fmt.Errorf("write --token-file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("write --token-file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write --token-file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write --token-file %s: %w", path, err)
	}
	return nil
}
