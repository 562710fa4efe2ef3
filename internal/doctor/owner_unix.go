//go:build !windows

package doctor

import (
	"io/fs"
	"syscall"
)

// ownerOf is fi's owner uid (-1 when the platform does not say).
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// aclProblem: off Windows owners and mode bits decide (checkDir's own rule).
func aclProblem(string) (decided bool, err error) { return false, nil }

func aclFix(string) string { return "" }
