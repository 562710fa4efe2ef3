//go:build !windows

package runner

// deleteUnsupported is false off Windows: os.Root.RemoveAll's unlinkat has no fallback to need.
func deleteUnsupported(error) bool { return false }
