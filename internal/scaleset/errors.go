package scaleset

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is an Actions-service refusal or failure. TypeName is the service's exception name (an
// assembly-qualified .NET name; match it by substring, as GitHub's own client does).
type Error struct {
	Op        string
	Status    int
	TypeName  string
	Message   string
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Actions service: %s", e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if name := e.exception(); name != "" {
		b.WriteString(" " + name)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Temporary classifies the error for the engine: network trouble, 429 and 5xx are retryable.
func (e *Error) Temporary() bool { return e.Retryable }

// exception is the short exception name ("RunnerScaleSetSessionConflictException").
func (e *Error) exception() string {
	name, _, _ := strings.Cut(e.TypeName, ",")
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSpace(name)
}

// Is reports whether err is an Actions-service error naming exception.
func Is(err error, exception string) bool {
	var e *Error
	return errors.As(err, &e) && strings.Contains(e.TypeName, exception)
}

// Exception names the client acts on (scaleset.md sections 2a and 3).
const (
	ExcSessionConflict = "RunnerScaleSetSessionConflictException"
	ExcSetNotFound     = "RunnerScaleSetNotFoundException"
	ExcSessionExpired  = "RunnerScaleSetSessionExpiredException"
	ExcAgentExists     = "AgentExistsException"
	ExcAgentNotFound   = "AgentNotFoundException"
	ExcJobRunning      = "JobStillRunningException"
)

// ErrRunnerBusy is RemoveRunner's answer for a runner running a job (400 JobStillRunningException).
var ErrRunnerBusy = errors.New("runner is running a job")

// ErrSessionLost means the session is gone at the service (refresh refused): open a new one.
var ErrSessionLost = errors.New("the scale-set session is gone at GitHub; a new one will be opened")

// newError reads the service's error body: {"typeName","message"}, text/plain, or empty.
func newError(op string, status int, body []byte) error {
	e := &Error{Op: op, Status: status, Retryable: status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusNotImplemented)}
	var v struct {
		TypeName string `json:"typeName"`
		Message  string `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil && (v.TypeName != "" || v.Message != "") {
		e.TypeName, e.Message = v.TypeName, v.Message
	} else {
		e.Message = errorMessage(body)
	}
	return e
}

// errorMessage is a bounded, single-line rendering of a plain-text error body.
func errorMessage(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
