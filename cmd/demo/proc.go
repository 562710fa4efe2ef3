package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cliOutput runs the runner-manager CLI once (--version, status) and returns its stdout.
func cliOutput(ctx context.Context, binDir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "runner-manager"), args...).Output()
	if err != nil {
		return "", fmt.Errorf("runner-manager %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// statusView is the head of `runner-manager status` (daemon, config, capacity, targets), without
// the recent events the live view has already shown.
func statusView(ctx context.Context, binDir, configPath string) string {
	out, err := cliOutput(ctx, binDir, "status", "--config", configPath)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	head, _, _ := strings.Cut(out, "RECENT EVENTS")
	var b strings.Builder
	for line := range strings.Lines(strings.TrimSpace(head)) {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// logTail quotes the last n lines of a child's log for an error message: why it failed to start
// is usually there.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return "its log " + path + " is empty"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "the end of " + path + ":\n    " + strings.Join(lines, "\n    ")
}
