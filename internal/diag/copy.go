package diag

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

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
// a hard link to a file it cannot read gets nothing from it. Keeping nothing is not an error. On
// Windows (copy_windows.go), where runners run as the daemon's account, it is a checked plain copy.
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
	if err := collect(runtimeDir, tmp, r, &a, &budget); err != nil {
		return a, err
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

// reader reads at most limit bytes from the end of the entry name of one source directory; why
// says why it was not kept.
type reader func(name string, limit int64) (data []byte, dropped int64, why string)

// keepFiles copies the named entries of one source directory into tmp through read, within the
// attempt's caps, each through r. Both walks (openat on unix, a checked plain copy on Windows)
// share it.
func keepFiles(names []string, prefix, tmp string, r *redact.Redactor, a *Attempt, budget *int64, read reader) {
	if len(names) > maxEntries {
		names = names[:maxEntries]
	}
	sort.Strings(names)
	for _, name := range names {
		shown := prefix + name
		if len(a.Files) >= MaxFiles || *budget <= 0 {
			a.Skipped = append(a.Skipped, shown+": over the attempt's cap")
			continue
		}
		data, dropped, why := read(name, min(FileCap, *budget))
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
