package selfupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// OldSuffix names the previous binary kept beside the private copy after an upgrade, for the
// crash-loop guard to roll back to. The next install or upgrade removes it.
const OldSuffix = ".old"

// Installer swaps the private binary the service runs (Target) for the source binary.
type Installer struct {
	Target  string        // the private copy, e.g. /var/lib/runner-manager/bin/runner-manager
	Timeout time.Duration // --version probe timeout; 0 = DefaultProbeTimeout
	Run     RunFunc       // nil = ExecRun
	Logger  *slog.Logger  // nil = slog.Default()

	copy func(dst io.Writer, src io.Reader) error // nil = io.Copy; tests inject a failing copy
	swapper
}

// Install copies c.Path over Target and proves the result runs: the copy is written to a temp file
// in Target's directory (fsync, 0755), the current Target is kept as Target.old, the temp file is
// renamed into place, and the installed file must answer --version with c.Version. On any failure
// the old file is put back and still runs. The daemon must have drained first; after a nil return it
// exits with the "upgrade pending" code (the Orchestrator returns ErrUpgradePending for that).
func (in *Installer) Install(ctx context.Context, c Candidate) error {
	old := in.Target + OldSuffix
	for _, p := range []string{old, in.Target + RejectedSuffix} {
		if err := in.removeIfExists(p); err != nil {
			return fmt.Errorf("upgrade to %s: removing the leftover %s: %w (remove it by hand and the next check retries)", c.Version, p, err)
		}
	}
	tmp, err := in.writeTemp(c.Path)
	if err != nil {
		return fmt.Errorf("upgrade to %s: copying %s beside %s: %w; the running binary is unchanged", c.Version, c.Path, in.Target, err)
	}
	defer os.Remove(tmp) // no-op once renamed into place

	// Keep the old file as .old by a hard link, then rename the copy over Target: Target names a
	// complete binary at every instant, so a crash mid-swap never leaves the service without one.
	// On Windows the running Target can be neither replaced nor removed, only renamed: it is
	// renamed to .old, and Target names nothing until the copy takes its name a moment later
	// (docs/upgrades.md says how to recover from a crash in between). TestInstallOnWindows.
	ops := in.ops()
	keep := ops.Link
	if in.renameAside() {
		keep = ops.Rename
	}
	hadOld := true
	if err := keep(in.Target, old); errors.Is(err, fs.ErrNotExist) {
		hadOld = false // first install: nothing to keep
	} else if err != nil {
		return fmt.Errorf("upgrade to %s: keeping %s as %s: %w; the running binary is unchanged", c.Version, in.Target, old, err)
	}
	swapped := false
	fail := func(cause error) error {
		switch {
		case !swapped && !hadOld:
			return fmt.Errorf("%w; the running binary is unchanged", cause)
		case !swapped && !in.renameAside(): // Target is still the old file; .old is only a second name for it
			_ = ops.Remove(old)
			return fmt.Errorf("%w; the running binary is unchanged", cause)
		case !hadOld:
			_ = ops.Remove(in.Target)
			return cause
		}
		if rerr := ops.Rename(old, in.Target); rerr != nil {
			return fmt.Errorf("%w; AND restoring the previous binary failed: %v: the service binary %s is missing, move %s back or run `runner-manager service install`", cause, rerr, in.Target, old)
		}
		_ = atomicfile.SyncDir(filepath.Dir(in.Target))
		if !swapped {
			return fmt.Errorf("%w; the running binary is unchanged", cause)
		}
		return fmt.Errorf("%w; the previous binary was put back", cause)
	}
	if err := ops.Rename(tmp, in.Target); err != nil {
		return fail(fmt.Errorf("upgrade to %s: renaming the copy into %s: %w", c.Version, in.Target, err))
	}
	swapped = true
	if err := atomicfile.SyncDir(filepath.Dir(in.Target)); err != nil {
		return fail(fmt.Errorf("upgrade to %s: syncing %s: %w", c.Version, filepath.Dir(in.Target), err))
	}
	// The source may have changed again since it was confirmed; only the expected version is trusted.
	got, err := ProbeVersion(context.WithoutCancel(ctx), in.Run, in.Target, in.Timeout)
	if err != nil {
		return fail(fmt.Errorf("upgrade to %s: the installed copy does not run: %w", c.Version, err))
	}
	if got != c.Version {
		return fail(fmt.Errorf("upgrade to %s: the installed copy reports %s (the source changed during the drain); the next check will consider the new file", c.Version, got))
	}
	in.logger().Info("upgrade installed", "target", in.Target, "version", c.Version, "previous_kept_as", old)
	return nil
}

// writeTemp copies src to a new executable temp file in Target's directory, synced to disk, and
// returns its path. A rename from the same directory is atomic; a copy is not.
func (in *Installer) writeTemp(src string) (string, error) {
	s, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer s.Close()
	dir, base := filepath.Split(in.Target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cp := in.copy
	if cp == nil {
		cp = func(dst io.Writer, src io.Reader) error { _, err := io.Copy(dst, src); return err }
	}
	return createSynced(dir, "."+base+".new-*", 0o755, func(f *os.File) error { return cp(f, s) })
}

func (in *Installer) logger() *slog.Logger { return loggerOr(in.Logger) }

// CopyExecutable installs src at dst the way an upgrade does (temp file, fsync, 0755, rename) but
// without keeping a .old; `service install` uses it.
func CopyExecutable(src, dst string) error {
	in := Installer{Target: dst}
	tmp, err := in.writeTemp(src)
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return atomicfile.SyncDir(filepath.Dir(dst))
}
