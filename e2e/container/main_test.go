//go:build e2e

// Package container holds the end-to-end tests of container runners (executor = "container",
// issue 27): the real daemon binary against the GitHub simulator and a private dockerd
// (e2e/dockertest), with the fake runner in a locally imported image. Root only: they fail,
// saying what is missing, rather than skip.
package container

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
