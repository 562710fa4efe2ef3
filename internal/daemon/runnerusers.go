package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// runnerUsers resolves daemon.runner_user: per-slot users (nil error, non-nil users), or nil for
// the daemon's own user, said loudly. Absent means per-slot as root; a non-root daemon cannot
// switch, so it runs them as itself and says what to do. euid is the daemon's (os.Geteuid(): -1 on
// Windows, which has no uids).
func runnerUsers(d config.Daemon, euid int, log *slog.Logger) (*runner.SlotUsers, error) {
	root := euid == 0
	switch {
	case d.PerSlotRunners(root) && root:
		return &runner.SlotUsers{Prefix: d.RunnerUserPrefix}, nil
	case d.RunnerUser == config.RunnerUserDaemon:
		log.Warn("runners run as the daemon's own user (daemon.runner_user = \"daemon\"): a job can read the GitHub credential, the state dir and other runners' secrets", "root", root)
		return nil, nil
	case d.RunnerUser == "" && euid < 0: // no uids here (Windows): runners run as the service's account
		log.Warn("runners run as the daemon's own account (Windows has no per-slot runner users): a job can read the GitHub credential and the state dir; install the service under a dedicated account (runner-manager service install --account) that holds nothing else, or set daemon.runner_user = \"daemon\" to accept this")
		return nil, nil
	case d.RunnerUser == "" && !root:
		log.Warn("the daemon is not root, so runners run as its own user and a job can read its credentials and the state dir; run the daemon as root to give each runner slot its own user, or set daemon.runner_user = \"daemon\" to accept this", "uid", euid)
		return nil, nil
	default: // per-slot, not root
		return nil, fmt.Errorf("daemon.runner_user = %q needs a root daemon to switch runners to their slot users (uid %d cannot): run the daemon as root, or set daemon.runner_user = \"daemon\" (runners then share the daemon's user)", d.RunnerUser, euid)
	}
}

// makeRuntimeRoot creates the runtime root 0711: runner users pass through it to their own
// directories, and nobody but the daemon lists it.
func makeRuntimeRoot(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("create the runtime directory root %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("set the runtime directory root %s to 0711: %w", dir, err)
	}
	return nil
}

// checkTraversable refuses a runtime root that slot users cannot reach: every directory above it
// must let others pass (x for others), or every runner's start fails with only "permission
// denied" on run.sh and the daemon retries new attempts for ever.
func checkTraversable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve the runtime directory root %s: %w", dir, err)
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("check %s above the runtime directory root: %w", d, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("runner slot users cannot pass through %s (mode %04o) to reach their runtime directories under %s: run `chmod o+x %s`, or move daemon.state_dir below directories others can pass through", d, fi.Mode().Perm(), abs, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
