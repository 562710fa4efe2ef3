package livetest

import (
	"os"
	"os/exec"
)

// Tool finds a host tool the test drives for real (promtool, tmux) and fails the test when it is
// missing, saying how to install it: a test that skipped instead would pass on a host that never
// ran the check. install is the hint, e.g. "run `make tools` (Debian package prometheus)".
func Tool(t TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH and this test needs it: %s", name, install)
	}
	return p
}

// Root fails the test unless it runs as root, saying what needs root: CI runs the tests as root,
// and a test that skipped instead would pass on a host that never ran it. what is the reason,
// e.g. "creating runner users".
func Root(t TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s needs root and this test does it for real: run go test as root, as CI does", what)
	}
}
