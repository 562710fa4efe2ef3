package engine

import (
	"fmt"
	"testing"
	"time"
)

type tempErr bool

// termErr has only Terminal, as internal/daemon's scope and configuration errors do.
type termErr struct{}

func (termErr) Error() string  { return "target names neither a repository nor an organization" }
func (termErr) Terminal() bool { return true }

func (t tempErr) Error() string   { return "GitHub refused" }
func (t tempErr) Temporary() bool { return bool(t) }

func TestClassify(t *testing.T) {
	at := time.Unix(5000, 0)
	tests := []struct {
		err   error
		class ErrorClass
	}{
		{fmt.Errorf("wrapped: %w", rateLimitErr{at: at}), "rate-limited"},
		{fmt.Errorf("wrapped: %w", authErr{}), "unauthorized"},
		{fmt.Errorf("wrapped: %w", tempErr(false)), "terminal"},
		{fmt.Errorf("wrapped: %w", termErr{}), "terminal"},
		{tempErr(true), "retryable"},
		{errOffline, "retryable"},
	}
	for _, tt := range tests {
		class, retryAt := Classify(tt.err)
		if class != tt.class {
			t.Errorf("Classify(%v) = %s, want %s", tt.err, class, tt.class)
		}
		if class == "rate-limited" && !retryAt.Equal(at) {
			t.Errorf("retry time = %v", retryAt)
		}
	}
}
