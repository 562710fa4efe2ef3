package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/status"
)

// reloadingDaemon answers status and reloads with res.
type reloadingDaemon struct{ res status.ReloadResult }

func (reloadingDaemon) Snapshot(context.Context) (status.Snapshot, error) {
	return status.Snapshot{}, nil
}
func (d reloadingDaemon) Reload(context.Context) (status.ReloadResult, error) {
	return d.res, nil
}

// TestReloadOutcomes: each outcome's text, --json, and exit code (docs/exit-codes.md); the
// daemon's side is internal/daemon's TestReloadCommand.
func TestReloadOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  status.ReloadResult
		args []string
		code int
		want string
	}{
		{"applied", status.ReloadResult{Outcome: status.ReloadApplied, Generation: 4, Changes: "added api"}, nil, exitOK,
			"reload applied: config generation 4 runs now: added api\n"},
		{"rejected", status.ReloadResult{Outcome: status.ReloadRejected, Generation: 3, Problems: []string{"/etc/rm.toml:9:15: bad", "/etc/rm.toml:12:1: worse"}}, nil, exitFailure,
			"reload rejected: the last good config (generation 3) keeps running; fix these and reload again:\n  /etc/rm.toml:9:15: bad\n  /etc/rm.toml:12:1: worse\n"},
		{"json", status.ReloadResult{Outcome: status.ReloadUnchanged, Generation: 3}, []string{"--json"}, exitOK,
			`"outcome": "unchanged"`},
	} {
		dir, err := os.MkdirTemp("", "rmrl") // short: unix socket paths are limited to ~104 bytes
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		socket := status.SocketPath(dir)
		l, err := status.Listen(t.Context(), socket)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- l.Serve(ctx, reloadingDaemon{tc.res}, nil) }()
		stdout, stderr, code := execute(t, append([]string{"reload", "--socket", socket}, tc.args...)...)
		cancel()
		<-done
		if code != tc.code || !strings.Contains(stdout, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d and %q", tc.name, code, stdout, stderr, tc.code, tc.want)
		}
		if tc.args != nil {
			var got status.ReloadResult
			if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Outcome != tc.res.Outcome || got.Generation != tc.res.Generation {
				t.Errorf("%s: --json decoded %+v (%v), want %+v", tc.name, got, err, tc.res)
			}
		}
	}
}
