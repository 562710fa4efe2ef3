package harness

import (
	"testing"
	"time"
)

// PollEvery is how often the waiting helpers re-check their condition.
const PollEvery = 50 * time.Millisecond

// Eventually polls cond until it returns true or timeout passes, then fails the test with what
// (a description of what was awaited). It is for real process and file events only.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Poll reports whether cond became true within timeout, checking every PollEvery.
func Poll(timeout time.Duration, cond func() bool) bool { return poll(timeout, cond) }

// poll reports whether cond became true within timeout.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}
