package readiness

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/logging"
)

func TestLinesParseBack(t *testing.T) {
	if pid, ok := ParseDaemon(DaemonLine(4242)); !ok || pid != 4242 {
		t.Errorf("ParseDaemon(DaemonLine(4242)) = %d, %v", pid, ok)
	}
	if url, ok := ParseSim(SimLine("http://127.0.0.1:8080")); !ok || url != "http://127.0.0.1:8080" {
		t.Errorf("ParseSim(SimLine(...)) = %q, %v", url, ok)
	}
	for _, line := range []string{"", "daemon running", "the daemon running (pid 1)", "daemon running (pid x)",
		`{"msg":"config warning","problem":"daemon running (pid 1)"}`, `12:00:00 ERR failed err="daemon running (pid 1)"`} {
		if _, ok := ParseDaemon(line); ok {
			t.Errorf("ParseDaemon(%q) took it for the ready line", line)
		}
	}
	if _, ok := ParseSim("ghsim: listening"); ok {
		t.Error("ParseSim took an unrelated line")
	}
}

// TestDaemonLineInEveryLogFormat: the daemon logs its ready line; it must be found in each format
// the logger writes (JSON, text on a terminal, text with a journald priority).
func TestDaemonLineInEveryLogFormat(t *testing.T) {
	for _, o := range []logging.Options{{Format: "json"}, {Format: "text"}, {Format: "text", IsTTY: true}, {Format: "auto", Journal: true}, {Format: "json", Journal: true}} {
		var b bytes.Buffer
		logging.NewWith(&b, o).Info(DaemonLine(77))
		line := strings.TrimSuffix(b.String(), "\n")
		if pid, ok := ParseDaemon(line); !ok || pid != 77 {
			t.Errorf("%+v: ParseDaemon(%q) = %d, %v", o, line, pid, ok)
		}
	}
}
