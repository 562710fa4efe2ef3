package harness

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// PollEvery is how often the waiting helpers re-check their condition.
const PollEvery = 50 * time.Millisecond

// Eventually polls cond until it returns true or timeout passes, then fails the test with what
// (a description of what was awaited). It is for real process and file events only.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := livetest.Poll(timeout, PollEvery, cond); err != nil {
		t.Fatalf("%v waiting for %s", err, what)
	}
}

// Poll reports whether cond became true within timeout, checking every PollEvery.
func Poll(timeout time.Duration, cond func() bool) bool {
	return livetest.Poll(timeout, PollEvery, cond) == nil
}
