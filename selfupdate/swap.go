package selfupdate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// RejectedSuffix names a binary moved aside on Windows while it still ran, so it could not be
// removed: the crash-looping one a rollback replaced, or the one `service install` replaced while
// the service ran (Installer.Replace). The next start (Guard.OnStart) or install removes it.
const RejectedSuffix = ".rejected"

// fileOps are the operations a swap makes on the binary's names. Windows refuses to replace or
// remove a running executable but lets it be renamed; tests model that with fileOps that refuse
// the same (windowsFiles in swap_test.go), so the rename-aside path runs on Linux too.
type fileOps interface {
	Rename(from, to string) error
	Remove(path string) error
	Link(from, to string) error
}

type osFiles struct{}

func (osFiles) Rename(from, to string) error { return os.Rename(from, to) }
func (osFiles) Remove(path string) error     { return os.Remove(path) }
func (osFiles) Link(from, to string) error   { return os.Link(from, to) }

// swapper is what Installer and Guard share: the files and whether the running binary must be
// renamed aside rather than replaced (Windows).
type swapper struct {
	fs   fileOps // nil = the OS
	goos string  // "" = runtime.GOOS; tests set "windows"
}

func (s swapper) ops() fileOps {
	if s.fs == nil {
		return osFiles{}
	}
	return s.fs
}

// renameAside: on Windows the running binary is renamed away before another takes its name,
// because replacing it (rename over it, or remove it) is refused while it runs.
func (s swapper) renameAside() bool {
	goos := s.goos
	if goos == "" {
		goos = runtime.GOOS
	}
	return goos == "windows"
}

func (s swapper) removeIfExists(path string) error {
	if err := s.ops().Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// dropAside removes a binary set aside while it ran (RejectedSuffix). Nothing needs its name, so
// one still running (the service was reinstalled and not yet restarted) is left to the next start.
func (in *Installer) dropAside() {
	if err := in.removeIfExists(in.Target + RejectedSuffix); err != nil {
		in.logger().Warn("cannot remove a binary set aside while it ran; the next start removes it", "file", in.Target+RejectedSuffix, "err", err)
	}
}

// swapping is one swap of Target for a synced copy, kept undoable: what was at Target is kept as
// aside first, then the copy takes Target's name.
type swapping struct {
	swapper
	target, aside   string
	hadOld, swapped bool
}

func (in *Installer) swap(aside string) *swapping {
	return &swapping{swapper: in.swapper, target: in.Target, aside: aside, hadOld: true}
}

// keep keeps Target as aside. On Unix that is a hard link, so Target names a complete binary at
// every instant and a crash mid-swap never leaves the service without one. On Windows the running
// Target can be neither replaced nor removed, only renamed: it is renamed aside, and Target names
// nothing until the copy takes its name a moment later (docs/upgrades.md says how to recover from
// a crash in between). TestInstallOnWindows, TestReplaceOnWindows.
func (s *swapping) keep() error {
	ops := s.ops()
	keep := ops.Link
	if s.renameAside() {
		keep = ops.Rename
	}
	if err := keep(s.target, s.aside); errors.Is(err, fs.ErrNotExist) {
		s.hadOld = false // first install: nothing to keep
	} else if err != nil {
		return fmt.Errorf("keeping %s as %s: %w", s.target, s.aside, err)
	}
	return nil
}

// replace renames the synced copy tmp to Target and makes that durable.
func (s *swapping) replace(tmp string) error {
	if err := s.ops().Rename(tmp, s.target); err != nil {
		return fmt.Errorf("renaming the copy into %s: %w", s.target, err)
	}
	s.swapped = true
	if err := atomicfile.SyncDir(filepath.Dir(s.target)); err != nil {
		return fmt.Errorf("syncing %s: %w", filepath.Dir(s.target), err)
	}
	return nil
}

// undo puts what keep kept back at Target and returns cause saying where that left the binary.
func (s *swapping) undo(cause error) error {
	ops := s.ops()
	switch {
	case !s.swapped && !s.hadOld:
		return fmt.Errorf("%w; the running binary is unchanged", cause)
	case !s.swapped && !s.renameAside(): // Target is still the old file; aside is only a second name for it
		_ = ops.Remove(s.aside)
		return fmt.Errorf("%w; the running binary is unchanged", cause)
	case !s.hadOld:
		_ = ops.Remove(s.target)
		return cause
	}
	if rerr := ops.Rename(s.aside, s.target); rerr != nil {
		return fmt.Errorf("%w; AND restoring the previous binary failed: %v: the service binary %s is missing, move %s back or run `runner-manager service install`", cause, rerr, s.target, s.aside)
	}
	_ = atomicfile.SyncDir(filepath.Dir(s.target))
	if !s.swapped {
		return fmt.Errorf("%w; the running binary is unchanged", cause)
	}
	return fmt.Errorf("%w; the previous binary was put back", cause)
}
