//go:build e2e && unix

// Package isolation is the end-to-end suite of per-slot runner users (daemon.runner_user =
// "per-slot"): it needs root, as CI is, and creates users with a test prefix it removes after.
// Unix only: on Windows runners run as the service's account (validate refuses per-slot there),
// so there is nothing of this suite to test.
package isolation

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

func TestMain(m *testing.M) {
	runnerusertest.SweepInMain() // users a killed earlier run left
	harness.Main(m, runnerusertest.SweepInMain)
}
