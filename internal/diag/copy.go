package diag

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
	"github.com/runner-manager/runner-manager/internal/redact"
)

// maxEntries bounds how many names of one _diag directory are looked at: a job may fill it.
const maxEntries = 256

// sources are the directories kept, relative to the attempt's runtime directory, with the prefix
// their files are shown under: the shim's log (the daemon's) and the runner's _diag (the job's).
var sources = []struct {
	path   []string
	prefix string
}{
	{[]string{"_diag"}, "shim/"},
	{[]string{"runner", "_diag"}, "runner/"},
}

// Keep copies the diagnostics of attempt a from its runtime directory into the store at root
// (created 0700) and prunes the store. Each file passes through r. Files are copied from
// descriptors opened without following links below the runtime directory, and only regular
// files with one link, owned by their directory's owner, are kept: a job that plants a symlink or
// a hard link to a file it cannot read gets nothing from it. Keeping nothing is not an error.
func Keep(root, runtimeDir string, a Attempt, r *redact.Redactor) (Attempt, error) {
	if err := checkID(a.ID); err != nil {
		return a, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return a, fmt.Errorf("create the diagnostics store %s: %w", root, err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return a, fmt.Errorf("make the diagnostics store %s private: %w", root, err)
	}
	tmp, err := os.MkdirTemp(root, ".keep-")
	if err != nil {
		return a, fmt.Errorf("keep diagnostics of %s: %w", a.ID, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	a.Files, a.Skipped = nil, nil
	budget := int64(AttemptCap)
	top, err := unix.Open(runtimeDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return a, fmt.Errorf("open runtime directory %s to keep its diagnostics: %w", runtimeDir, err)
	}
	defer unix.Close(top)
	for _, src := range sources {
		dir, err := openPath(top, src.path)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				a.Skipped = append(a.Skipped, fmt.Sprintf("%s: %v", filepath.Join(src.path...), err))
			}
			continue
		}
		keepDir(dir, src.prefix, tmp, r, &a, &budget)
		unix.Close(dir)
	}
	if len(a.Files) == 0 && len(a.Skipped) == 0 {
		return a, nil
	}
	meta, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return a, err
	}
	if err := atomicfile.Write(filepath.Join(tmp, metaFile), meta, 0o600); err != nil {
		return a, err
	}
	final := filepath.Join(root, a.ID)
	_ = os.RemoveAll(final) // kept before by a recovery that repeated the clean step
	if err := os.Rename(tmp, final); err != nil {
		return a, fmt.Errorf("keep diagnostics of %s: %w", a.ID, err)
	}
	if err := atomicfile.SyncDir(root); err != nil {
		return a, err
	}
	return a, Prune(root)
}

// openPath opens the directories of path one by one below dir, never following a link.
func openPath(dir int, path []string) (int, error) {
	fd := dir
	for i, name := range path {
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if i > 0 {
			unix.Close(fd)
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("not a directory (a link?): not read")
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// keepDir copies the regular files of the directory open at dir into tmp, within budget.
func keepDir(dir int, prefix, tmp string, r *redact.Redactor, a *Attempt, budget *int64) {
	var dst unix.Stat_t
	if err := unix.Fstat(dir, &dst); err != nil {
		return
	}
	// Read the names through a duplicate: os.File closes what it wraps.
	dup, err := unix.Dup(dir)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), prefix)
	names, _ := f.Readdirnames(maxEntries)
	f.Close()
	sort.Strings(names)
	for _, name := range names {
		shown := prefix + name
		if len(a.Files) >= MaxFiles || *budget <= 0 {
			a.Skipped = append(a.Skipped, shown+": over the attempt's cap")
			continue
		}
		data, dropped, why := readRegular(dir, name, dst.Uid, min(FileCap, *budget))
		if why != "" {
			a.Skipped = append(a.Skipped, shown+": "+why)
			continue
		}
		data = []byte(r.String(string(data)))
		i := len(a.Files)
		if err := atomicfile.Write(filepath.Join(tmp, storedName(i)), data, 0o600); err != nil {
			a.Skipped = append(a.Skipped, shown+": "+err.Error())
			continue
		}
		a.Files = append(a.Files, File{Name: shown, Size: int64(len(data)), Dropped: dropped})
		*budget -= int64(len(data))
	}
}

// readRegular reads at most limit bytes from the end of name in dir: opened without following a
// link and without blocking on a FIFO, kept only if it is a regular file with one link owned by
// owner. why says why it was not kept.
func readRegular(dir int, name string, owner uint32, limit int64) (data []byte, dropped int64, why string) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, 0, "a symbolic link: not followed"
		}
		return nil, 0, "cannot be opened: " + err.Error()
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, err.Error()
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, 0, "not a regular file"
	case st.Nlink != 1:
		return nil, 0, "a hard link: not read"
	case st.Uid != owner:
		return nil, 0, "not owned by its directory's owner: not read"
	}
	if st.Size > limit {
		dropped = st.Size - limit
	}
	data, err = io.ReadAll(io.NewSectionReader(f, dropped, limit))
	if err != nil {
		return nil, 0, err.Error()
	}
	return data, dropped, ""
}
