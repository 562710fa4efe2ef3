package engine

import (
	"fmt"
	"testing"
	"time"
)

type tempErr bool

func (t tempErr) Error() string   { return "GitHub refused" }
func (t tempErr) Temporary() bool { return bool(t) }

func TestClassify(t *testing.T) {
	at := time.Unix(5000, 0)
	tests := []struct {
		err   error
		class string
	}{
		{fmt.Errorf("wrapped: %w", rateLimitErr{at: at}), "rate-limited"},
		{fmt.Errorf("wrapped: %w", authErr{}), "unauthorized"},
		{fmt.Errorf("wrapped: %w", tempErr(false)), "terminal"},
		{tempErr(true), "retryable"},
		{errOffline, "retryable"},
	}
	for _, tt := range tests {
		class, retryAt := classify(tt.err)
		if class != tt.class {
			t.Errorf("classify(%v) = %s, want %s", tt.err, class, tt.class)
		}
		if class == "rate-limited" && !retryAt.Equal(at) {
			t.Errorf("retry time = %v", retryAt)
		}
	}
}
