//go:build unix

package runnerusertest

import "syscall"

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
