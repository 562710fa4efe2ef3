//go:build e2e

// Package container holds the end-to-end tests of container runners (executor = "container",
// issue 27): the real daemon binary against the GitHub simulator and a private dockerd
// (e2e/dockertest), with the fake runner in a locally imported image. Root only: they fail,
// saying what is missing, rather than skip.
package container

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
)

// TestMain removes the slot users of this run, and those a killed earlier run left, before and after.
func TestMain(m *testing.M) {
	runnerusertest.SweepInMain() // users a killed earlier run left
	harness.Main(m, runnerusertest.SweepInMain)
}
