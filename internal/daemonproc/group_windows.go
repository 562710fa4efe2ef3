//go:build windows

package daemonproc

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// group is the job object a child runs in: Windows' process groups deliver Ctrl events but can
// not be killed whole. Processes may break away, as the daemon's runner shims do, so they outlive
// the child as they outlive it on Unix.
type group struct{ job windows.Handle }

func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// joinGroup puts the just-started child in a new job object. What it started before this call
// (nothing, for runner-manager's programs, which start children only once running) stays out.
func joinGroup(p *os.Process) (group, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return group{}, fmt.Errorf("create a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
	_, err = windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	if err == nil {
		var h windows.Handle
		if h, err = windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid)); err == nil {
			err = windows.AssignProcessToJobObject(job, h)
			windows.CloseHandle(h)
		}
	}
	if err != nil {
		windows.CloseHandle(job)
		return group{}, fmt.Errorf("put pid %d in a job object: %w", p.Pid, err)
	}
	return group{job: job}, nil
}

func (g group) kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
}

func (g group) close() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
	}
}
