//go:build !unix

package journal

// lockConflict: without POSIX record locks any lock failure is treated as a conflict.
func lockConflict(error) bool { return true }

// lockHolder cannot name the holder on this platform.
func lockHolder(string) int { return 0 }
