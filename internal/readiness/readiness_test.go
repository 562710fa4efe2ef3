package readiness

import "testing"

func TestLinesParseBack(t *testing.T) {
	if pid, ok := ParseDaemon(DaemonLine(4242)); !ok || pid != 4242 {
		t.Errorf("ParseDaemon(DaemonLine(4242)) = %d, %v", pid, ok)
	}
	if url, ok := ParseSim(SimLine("http://127.0.0.1:8080")); !ok || url != "http://127.0.0.1:8080" {
		t.Errorf("ParseSim(SimLine(...)) = %q, %v", url, ok)
	}
	for _, line := range []string{"", "daemon running", "the daemon running (pid 1)", "daemon running (pid x)",
		`{"msg":"daemon running (pid 1)"}`} {
		if _, ok := ParseDaemon(line); ok {
			t.Errorf("ParseDaemon(%q) took it for the ready line", line)
		}
	}
	if _, ok := ParseSim("ghsim: listening"); ok {
		t.Error("ParseSim took an unrelated line")
	}
}
