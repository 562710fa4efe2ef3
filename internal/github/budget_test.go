package github

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

func TestBudgetClassifiesRefusals(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	reset := now.Add(17 * time.Minute)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name      string
		status    int
		header    http.Header
		body      string
		limited   bool
		secondary bool
		until     time.Time
	}{
		{"permission", 403, h("X-RateLimit-Remaining", "4000"), `{"message":"Resource not accessible by integration"}`, false, false, time.Time{}},
		{"primary 403", 403, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10)), `{"message":"API rate limit exceeded"}`, true, false, reset},
		{"primary 429", 429, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10)), ``, true, false, reset},
		{"secondary retry-after", 403, h("Retry-After", "42", "X-RateLimit-Remaining", "0"), `{"message":"You have exceeded a secondary rate limit"}`, true, true, now.Add(42 * time.Second)},
		{"secondary message only", 403, h("X-RateLimit-Remaining", "12"), `{"message":"You have exceeded a secondary rate limit."}`, true, true, now.Add(time.Minute)},
		{"bare 429", 429, h(), ``, true, true, now.Add(time.Minute)},
		{"retry-after date", 429, h("Retry-After", now.Add(3*time.Minute).Format(http.TimeFormat)), ``, true, true, now.Add(3 * time.Minute)},
		{"not a refusal", 404, h("Retry-After", "5"), ``, false, false, time.Time{}},
	}
	for _, tc := range cases {
		b := NewBudget(ghsim.NewFakeClock(now))
		rl, ok := b.limited(tc.status, tc.header, []byte(tc.body))
		if ok != tc.limited {
			t.Errorf("%s: limited = %v, want %v", tc.name, ok, tc.limited)
			continue
		}
		if !ok {
			continue
		}
		if rl.Secondary != tc.secondary || !rl.Until.Equal(tc.until) {
			t.Errorf("%s: %+v, want secondary=%v until %v", tc.name, rl, tc.secondary, tc.until)
		}
		if _, _, blocked := b.blocked(b.last, "core"); tc.secondary && !blocked {
			t.Errorf("%s: a secondary limit did not pause the budget", tc.name)
		}
	}
}

func TestBudgetForgetsOldCredentials(t *testing.T) {
	b := NewBudget(ghsim.NewFakeClock(time.Unix(1e9, 0)))
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "10")
	h.Set("X-RateLimit-Limit", "5000")
	for i := 0; i < 1000; i++ {
		b.observe(strconv.Itoa(i), h)
	}
	if n := len(b.rates); n > maxCredentials {
		t.Fatalf("budget remembers %d credentials", n)
	}
	if r, ok := b.Rate("core"); !ok || r.Remaining != 10 {
		t.Fatalf("latest credential's rate lost: %+v", r)
	}
}
