package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestProblemAndErrorText(t *testing.T) {
	ps := []Problem{
		{File: "c.toml", Severity: SeverityError, Key: "RUNNER_MANAGER_X", Message: "env first in input"},
		{File: "c.toml", Line: 9, Col: 1, Severity: SeverityWarning, Target: "api", Message: "w"},
		{File: "c.toml", Line: 3, Col: 5, Severity: SeverityError, Target: "api", Message: "max_runners must be at least 1 (got 0)"},
		{Severity: SeverityError, Key: "RUNNER_MANAGER_MAX_RUNNERS", Message: "daemon.max_runners must be a whole number"},
		{File: "c.toml", Line: 3, Col: 1, Severity: SeverityError, Message: "daemon.x"},
	}
	ps[0].File = "" // an environment problem has no file
	sortProblems(ps)
	got := (&Error{Problems: ps}).Error()
	want := `c.toml:3:1: daemon.x
c.toml:3:5: target "api": max_runners must be at least 1 (got 0)
c.toml:9:1: warning: target "api": w
environment RUNNER_MANAGER_X: env first in input
environment RUNNER_MANAGER_MAX_RUNNERS: daemon.max_runners must be a whole number`
	if got != want {
		t.Errorf("Error():\n%s\nwant:\n%s", got, want)
	}
	errs := (&Error{Problems: ps}).Errors()
	if len(errs) != 4 || !reflect.DeepEqual(errs[0], ps[0]) {
		t.Errorf("Errors() = %+v", errs)
	}
	if s := (Problem{File: "c.toml", Severity: SeverityError, Message: "m"}).String(); s != "c.toml: m" {
		t.Errorf("unpositioned: %q", s)
	}
}

// TestEchoedValuesAreBounded: a value echoed in a problem is cut to redact.MaxEcho bytes with its
// size noted, whatever rule echoes it, so a 5 MB value makes neither a 5 MB message nor a 5 MB
// log line. Fails without Problem.bounded (a 5.2 MB message).
func TestEchoedValuesAreBounded(t *testing.T) {
	huge := strings.Repeat("a", 5_242_880)
	for _, tc := range []struct{ name, body string }{
		{"a label", "[[target]]\nname = \"web\"\nrepository = \"acme/web\"\nlabels = [\"" + huge + "\"]\n"},
		{"a target name", "[[target]]\nname = \"" + huge + "\"\nrepository = \"acme/web\"\n"},
		{"an unknown key", "[daemon]\n" + huge + " = 1\n"},
		{"a value of the wrong kind", "[daemon]\nmax_runners = \"" + huge + "\"\n"},
		{"a state_dir", "[daemon]\nstate_dir = \"" + huge + "\"\n"},
	} {
		_, err := loadIn(t, "c.toml", tc.body+auth)
		var cerr *Error
		if !errors.As(err, &cerr) {
			t.Fatalf("%s: want a rejection, got %v", tc.name, err)
		}
		for _, p := range cerr.Problems {
			if n := len(p.String()); n > maxMessage+maxKey+64 {
				t.Errorf("%s: a problem of %d bytes: %.200s", tc.name, n, p.String())
			}
		}
		if !strings.Contains(err.Error(), `…" (5.2 MB, cut)`) {
			t.Errorf("%s: no echo says it was cut and how large it was: %.400s", tc.name, err.Error())
		}
	}
}

// TestNoSpuriousPrefixProblem: daemon.max_runners = math.MinInt64 is reported as an out-of-range
// max_runners only. MaxRunners-1 wrapped to the largest int, whose 19 digits made the prefix rule
// report user names of 35 characters for a prefix the file does not set.
func TestNoSpuriousPrefixProblem(t *testing.T) {
	for _, n := range []string{"-9223372036854775808", "-1", "0", "9223372036854775807"} {
		_, err := loadIn(t, "c.toml", "[daemon]\nmax_runners = "+n+"\n"+auth)
		var cerr *Error
		if !errors.As(err, &cerr) {
			t.Fatalf("max_runners = %s: want a rejection, got %v", n, err)
		}
		for _, p := range cerr.Problems {
			if p.Key != "daemon.max_runners" {
				t.Errorf("max_runners = %s: a problem about another key: %s", n, p.String())
			}
		}
	}
}
