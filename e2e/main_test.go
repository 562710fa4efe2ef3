//go:build e2e

package e2e

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
