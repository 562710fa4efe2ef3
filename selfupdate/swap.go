package selfupdate

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
)

// RejectedSuffix names the binary a rollback on Windows moved aside: the crash-looping one, which
// is still running at that moment and cannot be removed. The next start (Guard.OnStart) or
// install removes it.
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
