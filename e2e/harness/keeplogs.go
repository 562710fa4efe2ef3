package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// KeepLogsEnv names a directory in which a failed test keeps each of its daemons' whole stdout
// and log (the failure prints only their last tailLines lines, and the test's temporary directory
// that held them is removed when it ends). Unset, nothing is kept.
const KeepLogsEnv = "E2E_KEEP_LOGS"

// failureOutput is what a failure prints of the daemon: the tails of its stdout and log, and where
// their whole copies are kept when KeepLogsEnv asks for them.
func (d *Daemon) failureOutput() string {
	out := d.tails()
	root := os.Getenv(KeepLogsEnv)
	if root == "" {
		return out
	}
	dir, err := d.keepLogs(root)
	if err != nil {
		return out + fmt.Sprintf("--- harness: %s=%s: the whole log was not kept: %v ---\n", KeepLogsEnv, root, err)
	}
	return out + fmt.Sprintf("--- the whole stdout and log are kept in %s ---\n", dir)
}

// keepLogs copies the daemon's stdout and log files into a directory of their own under
// root/<test name> (one per daemon: a test may start several) and returns it.
func (d *Daemon) keepLogs(root string) (string, error) {
	parent := filepath.Join(root, filepath.FromSlash(d.t.Name()))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("daemon-pid%d-", d.PID))
	if err != nil {
		return "", err
	}
	for _, src := range []string{d.StdoutPath, d.StderrPath} {
		data, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}
