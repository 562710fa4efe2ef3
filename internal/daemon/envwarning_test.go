package daemon

import (
	"os"
	"strings"
	"testing"
)

// The daemon logs the warning validate prints when its config file holds target env values every
// local user can read (every job runs as a local user), without the value (issue 26 item 5).
func TestDaemonWarnsOfReadableEnvValues(t *testing.T) {
	e := newEnv(t)
	e.writeConfig(webTarget(1) + "[target.env]\nDEPLOY_KEY = \"s3cret-value\"\n")
	if err := os.Chmod(e.configPath, 0o644); err != nil {
		t.Fatal(err)
	}
	e.start()
	log := e.read(e.logs)
	var warned bool
	for _, line := range strings.Split(log, "\n") {
		warned = warned || strings.Contains(line, "config warning") &&
			strings.Contains(line, "the config file holds target env values and is readable by every local user (mode 0644)")
	}
	if !warned {
		t.Errorf("no config warning of the readable env values in the daemon log:\n%s", log)
	}
	if strings.Contains(log, "s3cret-value") {
		t.Errorf("the daemon log holds a target env value:\n%s", log)
	}
}
