package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// writeJSONAtomic writes v as JSON to dir/name so that a reader never sees a torn file.
func writeJSONAtomic(dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return atomicfile.Write(filepath.Join(dir, name), append(data, '\n'), 0o600)
}

// readJSON decodes dir/name into v. A missing file is reported with fs.ErrNotExist in the chain.
func readJSON(dir, name string, v any) error {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("read %s in %s: %w", name, dir, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s in %s (the file is corrupt; the attempt's outcome is unknown): %w",
			name, dir, err)
	}
	return nil
}
