package selfupdate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"time"
)

// RunFunc runs the program at path with args and returns its standard output. It must stop the
// program when ctx ends. Tests inject fakes; ExecRun is the real one.
type RunFunc func(ctx context.Context, path string, args ...string) ([]byte, error)

// ExecRun runs path as a child process. WaitDelay bounds the wait for output pipes held open by a
// grandchild after the child itself was killed, so a hung candidate cannot hang the daemon.
func ExecRun(ctx context.Context, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && stderr.Len() > 0 {
		return out, fmt.Errorf("%w: %s", err, firstLine(stderr.Bytes()))
	}
	return out, err
}

// DefaultProbeTimeout is how long a candidate gets to answer --version; a real binary answers in
// milliseconds, a partial file or a wrong-architecture file fails at once, a broken one may hang.
const DefaultProbeTimeout = 10 * time.Second

// ProbeVersion runs "path --version" under timeout and returns the version it reports.
func ProbeVersion(ctx context.Context, run RunFunc, path string, timeout time.Duration) (string, error) {
	if run == nil {
		run = ExecRun
	}
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run(pctx, path, "--version")
	if ctx.Err() != nil {
		return "", fmt.Errorf("probing %s: %w", path, ctx.Err())
	}
	if errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%s --version did not answer within %s", path, timeout)
	}
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %w", path, err)
	}
	v, err := ParseVersion(out)
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return v, nil
}

// versionLine is what internal/version.String prints; the version itself is one token of the
// characters semver and git-describe use, so random bytes from a broken file do not pass.
var versionLine = regexp.MustCompile(`^runner-manager ([0-9A-Za-z][0-9A-Za-z.+\-]{0,63})$`)

// ParseVersion extracts X from the output "runner-manager X\n" of --version.
func ParseVersion(out []byte) (string, error) {
	line := bytes.TrimRight(out, "\r\n")
	m := versionLine.FindSubmatch(line)
	if m == nil {
		return "", fmt.Errorf("output %q is not \"runner-manager <version>\"; not a runner-manager binary", truncate(firstLine(out), 80))
	}
	return string(m[1]), nil
}

func firstLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
