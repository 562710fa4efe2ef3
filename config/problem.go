package config

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Severity says whether a Problem rejects the file (SeverityError) or is only reported (SeverityWarning).
type Severity string

// The two severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding about a config file, positioned where the parser could tell. It is the
// stable shape shared by `runner-manager validate` (text, JSON and GitHub annotations), the daemon's
// reload log and its status output.
type Problem struct {
	File     string   `json:"file,omitempty"`   // the config file; empty for an environment variable
	Line     int      `json:"line,omitempty"`   // 1-based; 0 only when the problem has no place in the file
	Col      int      `json:"col,omitempty"`    // 1-based
	Severity Severity `json:"severity"`         // error or warning
	Target   string   `json:"target,omitempty"` // name of the target concerned, if any
	Key      string   `json:"key,omitempty"`    // dotted key ("target.1.max_runners") or RUNNER_MANAGER_* variable
	Message  string   `json:"message"`          // for the operator; never contains a secret value
}

// Text is the problem without position or severity: `target "api": max_runners must be at least 1 (got 0)`.
func (p Problem) Text() string {
	if p.Target != "" {
		return fmt.Sprintf("target %q: %s", p.Target, p.Message)
	}
	return p.Message
}

// String is the problem as compilers print it: `path:line:col: target "api": ...`, with
// "warning: " before the text of a warning.
func (p Problem) String() string {
	text := p.Text()
	if p.Severity == SeverityWarning {
		text = "warning: " + text
	}
	switch {
	case p.File == "" && p.Key != "":
		return "environment " + p.Key + ": " + text
	case p.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, text)
	default:
		return p.File + ": " + text
	}
}

// Error is what Load returns when the file is rejected: every problem found (errors and the
// warnings found alongside them), in file order. Any other error from Load means the file could not
// be read at all.
type Error struct {
	Problems []Problem
	// StateDir is the state_dir the rejected file names (after defaults and environment), when
	// the file could be decoded at all: `status` still finds the daemon's socket through it.
	StateDir string
}

// Error lists every problem, one per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Errors returns only the problems of severity error.
func (e *Error) Errors() []Problem {
	return slices.DeleteFunc(slices.Clone(e.Problems), func(p Problem) bool { return p.Severity != SeverityError })
}

// sortProblems orders problems by file position, environment problems (line 0) last, keeping the
// order of the checks for problems at the same place.
func sortProblems(ps []Problem) {
	line := func(p Problem) int {
		if p.Line == 0 {
			return math.MaxInt
		}
		return p.Line
	}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(line(a), line(b)), cmp.Compare(a.Col, b.Col))
	})
}
