package github

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrRunnerBusy is returned by DeleteRunner when GitHub refuses (422) because the runner is
// running a job. It is not a failure: the runner deregisters itself when its job ends.
var ErrRunnerBusy = errors.New("the runner is running a job; GitHub removes it when the job ends")

// ErrNotSent marks a call given up before any attempt of it left this host (its context ended
// while it waited for the request governor): GitHub saw nothing, so nothing needs undoing.
var ErrNotSent = errors.New("not sent to GitHub")

// Error is a GitHub call that failed for a reason other than rate limiting or authentication.
// Retryable ones (5xx, connection errors) were already retried with backoff before being returned.
type Error struct {
	Target    string // "acme/api" or "acme"
	Op        string // what runner-manager was doing, e.g. "register a runner"
	Status    int    // HTTP status; 0 for a connection error
	Retryable bool
	Detail    string // GitHub's message or the remedy, phrased for the operator
	Err       error
}

func (e *Error) Error() string {
	what := prefix(e.Target, e.Op)
	switch {
	case e.Status == 0 && e.Detail != "":
		return what + ": " + e.Detail
	case e.Status == 0:
		return fmt.Sprintf("%s: cannot reach GitHub: %v", what, e.Err)
	default:
		return fmt.Sprintf("%s: GitHub refused (%d): %s", what, e.Status, e.Detail)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether trying again later may succeed.
func (e *Error) Temporary() bool { return e.Retryable }

// RateLimitedError means GitHub must not be called again before Until, for a primary limit
// (x-ratelimit-reset) or a secondary one (retry-after). No request was sent before the reset.
type RateLimitedError struct {
	Target    string
	Op        string
	Resource  string // "core", ...; "secondary" for a secondary limit
	Until     time.Time
	Secondary bool
}

func (e *RateLimitedError) Error() string {
	kind := "the GitHub API rate limit (" + e.Resource + ")"
	if e.Secondary {
		kind = "a GitHub secondary rate limit"
	}
	msg := fmt.Sprintf("%s is exhausted until %s; runner-manager waits and resumes by itself", kind, e.Until.UTC().Format(time.RFC3339))
	if e.Op == "" {
		return msg
	}
	return prefix(e.Target, e.Op) + ": " + msg
}

// RetryAfter is when the next call may be sent.
func (e *RateLimitedError) RetryAfter() time.Time { return e.Until }

// UnauthorizedError means GitHub answered 401 even after the credential was re-read once.
type UnauthorizedError struct {
	Target     string
	Op         string
	Credential string // e.g. "the token in /etc/runner-manager/token"
	Err        error
}

func (e *UnauthorizedError) Error() string {
	if e.Err != nil { // the credential's own error already names it and says what to do
		return prefix(e.Target, e.Op) + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s: GitHub rejected %s (401)", prefix(e.Target, e.Op), e.Credential) + ": replace the credential (`runner-manager auth login`, a new token in the token file, or a new App key)"
}

func (e *UnauthorizedError) Unwrap() error { return e.Err }

// Unauthorized marks the error for the engine's classification.
func (e *UnauthorizedError) Unauthorized() bool { return true }

// IsRetryable reports whether err is worth trying again later (5xx, network, rate limit).
func IsRetryable(err error) bool {
	var e *Error
	var rl *RateLimitedError
	return errors.As(err, &rl) || (errors.As(err, &e) && e.Retryable)
}

// IsTerminal reports whether err will not go away by retrying: a refusal (403 permission, 404,
// 422), an unauthorized credential, or a configuration problem.
func IsTerminal(err error) bool {
	return err != nil && !IsRetryable(err) && !errors.Is(err, ErrRunnerBusy) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// IsUnauthorized reports whether err means the credential is not accepted.
func IsUnauthorized(err error) bool {
	var u interface{ Unauthorized() bool }
	return errors.As(err, &u) && u.Unauthorized()
}

// prefix says what failed for which target, the start of every message.
func prefix(target, op string) string {
	if target == "" {
		return "cannot " + op
	}
	return "target " + target + ": cannot " + op
}
