//go:build e2e

// Package upgrade is the end-to-end test of self-update (issue 7, DESIGN.md promises 5 and 6): two
// real builds of runner-manager that differ only in their linked version, a daemon run from a
// private copy with --upgrade-source against the in-process GitHub simulator, and a "package
// manager" that replaces the source binary. It checks that a busy job finishes before the swap,
// that a partial file is ignored, that the daemon hands over with exit code 75 and that the new
// binary, started again as a service manager would, reports its version and leaves a clean host.
//
// It never edits the daemon's state directory (beyond placing the private copy where `service
// install` does) or the private copy itself: only the source path is written, as an operator's
// package manager would.
package upgrade

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
