package diag

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prune drops the oldest kept attempts until at most MaxAttempts are kept and they hold at most
// TotalCap bytes, and removes the temp directories of keeps that never finished.
func Prune(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("prune the kept diagnostics: %w", err)
	}
	for _, e := range entries {
		// A keep cut short by a crash; one under way in another loop is younger than an hour.
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), ".keep-") && time.Since(info.ModTime()) > time.Hour {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	kept, err := List(root) // newest first
	if err != nil {
		return err
	}
	var total int64
	for i, a := range kept {
		var size int64
		for _, f := range a.Files {
			size += f.Size
		}
		total += size
		if i < MaxAttempts && total <= TotalCap {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, a.ID)); err != nil {
			return fmt.Errorf("drop the kept diagnostics of %s: %w", a.ID, err)
		}
	}
	return nil
}
