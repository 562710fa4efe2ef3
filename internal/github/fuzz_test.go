package github

import (
	"net/http"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// FuzzRateLimitHeaders feeds arbitrary refusal headers and bodies to the classifier: it must not
// panic, and a secondary limit must never be in the past (that would let requests through at once).
func FuzzRateLimitHeaders(f *testing.F) {
	f.Add(403, "42", "0", "1767225600", `{"message":"You have exceeded a secondary rate limit"}`)
	f.Add(429, "", "", "", "")
	f.Add(403, "Wed, 21 Oct 2015 07:28:00 GMT", "12", "x", "abuse")
	f.Add(403, "-5", "0", "-1", "")
	f.Fuzz(func(t *testing.T, status int, retryAfter, remaining, reset, body string) {
		now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		b := NewBudget(ghsim.NewFakeClock(now))
		b.observe("id", h)
		rl, ok := b.limited(status, h, []byte(body))
		if ok && rl.Secondary && rl.Until.Before(now) && retryAfter == "" {
			t.Fatalf("secondary limit without retry-after ends in the past: %v", rl.Until)
		}
	})
}
