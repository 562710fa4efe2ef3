package selfupdate

import (
	"context"
	"fmt"
	"io"
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
	if err := in.removeIfExists(old); err != nil {
		return fmt.Errorf("upgrade to %s: removing the leftover %s: %w (remove it by hand and the next check retries)", c.Version, old, err)
	}
	in.dropAside()
	tmp, err := in.writeTemp(c.Path)
	if err != nil {
		return fmt.Errorf("upgrade to %s: copying %s beside %s: %w; the running binary is unchanged", c.Version, c.Path, in.Target, err)
	}
	defer os.Remove(tmp) // no-op once renamed into place

	sw := in.swap(old)
	if err := sw.keep(); err != nil {
		return fmt.Errorf("upgrade to %s: %w; the running binary is unchanged", c.Version, err)
	}
	if err := sw.replace(tmp); err != nil {
		return sw.undo(fmt.Errorf("upgrade to %s: %w", c.Version, err))
	}
	fail := sw.undo
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
	return atomicfile.Temp(dir, "."+base+".new-*", 0o755, func(f io.Writer) error { return cp(f, s) })
}

func (in *Installer) logger() *slog.Logger { return loggerOr(in.Logger) }

// Replace is `service install`'s copy of src to Target: the swap Install makes, without its
// version proof, and the previous binary is not kept (an operator's install is not rolled back
// to). It never replaces a running Target, so on Windows a reinstall works while the service
// runs: the running binary is renamed to Target.rejected, keeps running there until the service
// restarts, and is removed then (Guard.OnStart); stillRunning says so. TestReplaceOnWindows.
func (in *Installer) Replace(src string) (stillRunning bool, err error) {
	aside := in.Target + RejectedSuffix
	for _, p := range []string{in.Target + OldSuffix, aside} {
		if err := in.removeIfExists(p); err != nil {
			return false, in.stopFirst(fmt.Errorf("removing the leftover %s: %w", p, err))
		}
	}
	tmp, err := in.writeTemp(src)
	if err != nil {
		return false, fmt.Errorf("copying %s to %s: %w", src, in.Target, err)
	}
	defer os.Remove(tmp) // no-op once renamed into place
	sw := in.swap(aside)
	if err := sw.keep(); err != nil {
		return false, in.stopFirst(err)
	}
	if err := sw.replace(tmp); err != nil {
		return false, in.stopFirst(sw.undo(err))
	}
	if err := in.removeIfExists(aside); err != nil {
		if !in.renameAside() {
			return false, fmt.Errorf("removing the previous binary %s: %w", aside, err)
		}
		return true, nil
	}
	return false, nil
}

// stopFirst adds what to do when Windows refused to move or remove the service's binary: the
// service (or another program) still has it open.
func (in *Installer) stopFirst(err error) error {
	if !in.renameAside() {
		return err
	}
	return fmt.Errorf("%w; the service may still be running it: run `runner-manager service stop` first, then install again", err)
}
