package webhook

import (
	"testing"

	"go.uber.org/goleak"
)

// Every server goroutine is owned and joined; goleak checks none outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
