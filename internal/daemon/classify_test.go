package daemon

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
)

// The engine owns the error classes (engine.Classify); this adapter only gives its errors the
// methods Classify reads. Every error the adapter makes of its own must land in the class meant.
func TestAdapterErrorsHaveTheEngineClassIntended(t *testing.T) {
	noClient := newGitHub(&config.Config{}, func(string, config.GitHub) (*github.Client, error) {
		return nil, errors.New("no token file /etc/runner-manager/token")
	})
	_, errScope := noClient.Runners(context.Background(), config.Target{Name: "x"})
	_, errCred := noClient.Runners(context.Background(), config.Target{Name: "x", Repository: "acme/web"})
	reset := time.Unix(5000, 0)
	tests := []struct {
		name string
		err  error
		want engine.ErrorClass
	}{
		{"a target without repository or organization", errScope, engine.ClassTerminal},
		{"a credential that cannot be loaded", errCred, engine.ClassUnauthorized},
		{"403 permission", classify(&github.Error{Status: 403, Detail: "Resource not accessible"}), engine.ClassTerminal},
		{"404", classify(&github.Error{Status: 404}), engine.ClassTerminal},
		{"5xx after retries", classify(&github.Error{Status: 502, Retryable: true}), engine.ClassRetryable},
		{"rate limited", classify(&github.RateLimitedError{Until: reset}), engine.ClassRateLimited},
		{"401", classify(&github.UnauthorizedError{Credential: "the token"}), engine.ClassUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			if got, _ := engine.Classify(tt.err); got != tt.want {
				t.Fatalf("engine.Classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

// A 409 on a registration is not a class but a fact the engine acts on (it finds the runner by name).
func TestRegistrationConflictIsNameTaken(t *testing.T) {
	err := jitError(fmt.Errorf("register: %w", &github.Error{Status: 409, Detail: "Already exists"}))
	if !errors.Is(err, engine.ErrRunnerNameTaken) {
		t.Fatalf("jitError(409) = %v, want engine.ErrRunnerNameTaken", err)
	}
	if err := jitError(&github.Error{Status: 422}); errors.Is(err, engine.ErrRunnerNameTaken) {
		t.Fatal("a 422 is not a taken name")
	}
}

// A registration given up in the request governor reaches the engine as ErrNotSent (it concludes
// the attempt without a lookup by name); any other failure does not.
func TestRegistrationNotSentIsNotSent(t *testing.T) {
	err := jitError(fmt.Errorf("register: %w: %w", github.ErrNotSent, context.Canceled))
	if !errors.Is(err, engine.ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("jitError(not sent) = %v, want engine.ErrNotSent", err)
	}
	if err := jitError(fmt.Errorf("register: %w", context.Canceled)); errors.Is(err, engine.ErrNotSent) {
		t.Fatal("a request cut in flight is not 'not sent'")
	}
}
