package config

import (
	"reflect"
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
