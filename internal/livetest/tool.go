package livetest

import "os/exec"

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
