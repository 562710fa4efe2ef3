//go:build e2e

// Package fleet runs three real daemons against one simulator and one embedded etcd (issue 19's
// acceptance): launches, GitHub reads and leaderships are shared, and failures of a host or of
// etcd lose no job.
package fleet

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
