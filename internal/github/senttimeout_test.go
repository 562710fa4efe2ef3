package github

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// Issue 28 item 3: a registration GitHub does not answer is given up after its own short bound
// once sent (WithSentTimeout), not after the caller's general call timeout; one cut before it was
// sent stays ErrNotSent.
func TestSentTimeoutBoundsACallOnceSent(t *testing.T) {
	s := newSim(t)
	c, _ := s.tokenClient(s.token)
	s.srv.AddFault(ghsim.Fault{Path: "/repos/acme/api/actions/runners/generate-jitconfig", Kind: ghsim.FaultLatency, Latency: time.Hour})
	outer, stop := context.WithTimeout(context.Background(), time.Minute) // the general call timeout
	defer stop()
	_, err := c.GenerateJITConfig(WithSentTimeout(outer, 50*time.Millisecond), repoScope, "runner-manager-1", []string{"linux"}, 0, "")
	if err == nil || errors.Is(err, ErrNotSent) {
		t.Fatalf("a registration GitHub did not answer: %v, want an error that is not ErrNotSent", err)
	}
	if outer.Err() != nil {
		t.Fatalf("the registration ran to the general call timeout: %v", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.GenerateJITConfig(WithSentTimeout(gone, time.Minute), repoScope, "runner-manager-2", []string{"linux"}, 0, "")
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("cut in the governor: %v, want ErrNotSent", err)
	}
}
