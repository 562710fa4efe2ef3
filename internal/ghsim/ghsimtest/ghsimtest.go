// Package ghsimtest starts the GitHub simulator (internal/ghsim) for one test: on loopback, with
// the options given, serving until the test and its cleanups end. What the test then creates in
// it (organisations, repositories, tokens) stays with the test.
package ghsimtest

import (
	"context"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// Start returns a started simulator that is closed when tb ends. It serves until then, after
// tb's own context is cancelled, so a daemon that a later-registered cleanup stops still reaches
// it while it drains. A simulator that cannot start fails tb.
func Start(tb testing.TB, opts ghsim.Options) *ghsim.Server {
	tb.Helper()
	srv, err := ghsim.New(opts)
	if err != nil {
		tb.Fatalf("create the GitHub simulator: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatalf("start the GitHub simulator: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}
