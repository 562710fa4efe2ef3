package config

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/internal/redact"
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

// Bounds of what a problem echoes (docs/configuration.md, "Messages"): each quoted value at most
// redact.MaxEcho bytes, a whole message at most maxMessage, a key at most maxKey; a longer one is
// cut with its size noted, so a 5 MB value is not repeated into a 5 MB message, log line or
// pull-request annotation.
const (
	maxMessage = 1024
	maxKey     = 256
)

// bounded is p safe to echo anywhere: every quoted value longer than redact.MaxEcho cut, then
// the message, key and target bounded, each scrubbed of credential shapes before it is cut (so a
// cut never leaves half a token that no longer looks like one). Every problem of a load passes here.
func (p Problem) bounded() Problem {
	p.Message = redact.Bound(cutQuoted(p.Message), maxMessage)
	p.Key = redact.Bound(p.Key, maxKey)
	p.Target = redact.Bound(p.Target, redact.MaxEcho)
	return p
}

// cutQuoted replaces each Go-quoted value (%q) in msg longer than redact.MaxEcho by redact.Quote of
// it; a scan rather than a regular expression, which took seconds on a 5 MB value.
func cutQuoted(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(msg) && msg[j] != '"' {
			if msg[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(msg) {
			break
		}
		q := msg[i : j+1]
		if v, err := strconv.Unquote(q); err == nil && len(v) > redact.MaxEcho {
			q = redact.Quote(v)
		}
		b.WriteString(msg[:i])
		b.WriteString(q)
		msg = msg[j+1:]
	}
	if b.Len() == 0 {
		return msg
	}
	b.WriteString(msg)
	return b.String()
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
	// SecretFiles are the credential files the rejected file names, when it could be decoded:
	// their contents are scrubbed from what reports the rejection, as a valid file's are.
	SecretFiles []SecretFile
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
