//go:build windows

package diag

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// collect is Keep's walk on Windows: a careful plain copy. Runners run as the daemon's own account
// there (internal/runner on Windows), so a planted link cannot reach a file the job could not read
// itself; the checks still keep the store to the job's own regular files: no directory or file that
// is a link or reparse point is followed, a file must still be the one examined when it is opened,
// and a file with more than one link is not read. Tested under wine (docs/testing.md).
func collect(runtimeDir, tmp string, r *redact.Redactor, a *Attempt, budget *int64) error {
	if fi, err := os.Lstat(runtimeDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("open runtime directory %s to keep its diagnostics: %w", runtimeDir, errors.Join(err, notDir(fi)))
	}
	for _, src := range sources {
		dir := runtimeDir
		var err error
		for _, name := range src.path {
			dir = filepath.Join(dir, name)
			var fi os.FileInfo
			if fi, err = os.Lstat(dir); err == nil {
				err = notDir(fi)
			}
			if err != nil {
				break
			}
		}
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				a.Skipped = append(a.Skipped, fmt.Sprintf("%s: %v", filepath.Join(src.path...), err))
			}
			continue
		}
		entries, _ := os.ReadDir(dir)
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		keepFiles(names, src.prefix, tmp, r, a, budget, func(name string, limit int64) ([]byte, int64, string) {
			return readRegular(filepath.Join(dir, name), limit)
		})
	}
	return nil
}

func notDir(fi os.FileInfo) error {
	if fi != nil && (!fi.IsDir() || fi.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0) {
		return errors.New("not a directory (a link?): not read")
	}
	return nil
}

// readRegular reads at most limit bytes from the end of path, kept only if it is a regular file
// (not a link or reparse point) with one link, and the same file when opened as when examined.
func readRegular(path string, limit int64) (data []byte, dropped int64, why string) {
	before, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil, 0, "cannot be examined: " + err.Error()
	case before.Mode()&os.ModeSymlink != 0 || before.Mode()&os.ModeIrregular != 0:
		return nil, 0, "a symbolic link: not followed" // or another reparse point
	case !before.Mode().IsRegular():
		return nil, 0, "not a regular file"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, "cannot be opened: " + err.Error()
	}
	defer f.Close()
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &info); err != nil {
		return nil, 0, err.Error()
	}
	after, err := f.Stat()
	switch {
	case err != nil:
		return nil, 0, err.Error()
	case !os.SameFile(before, after):
		return nil, 0, "replaced while being read: not read"
	case info.NumberOfLinks != 1:
		return nil, 0, "a hard link: not read"
	}
	if size := after.Size(); size > limit {
		dropped = size - limit
	}
	data, err = io.ReadAll(io.NewSectionReader(f, dropped, limit))
	if err != nil {
		return nil, 0, err.Error()
	}
	return data, dropped, ""
}
