//go:build windows

package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// passPipes hands the config and ready pipes to the shim cmd starts: os.Pipe's handles are
// inheritable, Go passes a child exactly the handles listed, and their values, the same in the
// child, travel in shimHandlesEnv (Windows has no descriptor numbers to agree on).
func passPipes(cmd *exec.Cmd, config, ready *os.File) {
	hs := []syscall.Handle{syscall.Handle(config.Fd()), syscall.Handle(ready.Fd())}
	cmd.SysProcAttr.AdditionalInheritedHandles = hs
	cmd.Env = append(withoutVar(cmd.Env, shimHandlesEnv), fmt.Sprintf("%s=%d,%d", shimHandlesEnv, hs[0], hs[1]))
}

// inheritedPipes are the pipes passPipes handed this shim (nil when it was not started so).
func inheritedPipes() (config, ready *os.File) {
	a, b, ok := strings.Cut(os.Getenv(shimHandlesEnv), ",")
	ha, errA := strconv.ParseUint(a, 10, 64)
	hb, errB := strconv.ParseUint(b, 10, 64)
	if !ok || errA != nil || errB != nil || ha == 0 || hb == 0 {
		return nil, nil
	}
	return os.NewFile(uintptr(ha), "jitconfig"), os.NewFile(uintptr(hb), "ready")
}

// startDetached starts cmd out of the daemon's job object, and in it when that job forbids
// breaking away (CreateProcess then refuses with access denied): the shim then ends with the
// daemon's job, which is what whoever made that job asked for.
func startDetached(cmd *exec.Cmd) (*exec.Cmd, error) {
	err := cmd.Start()
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) || cmd.SysProcAttr.CreationFlags&windows.CREATE_BREAKAWAY_FROM_JOB == 0 {
		return cmd, err
	}
	retry := exec.Command(cmd.Path, cmd.Args[1:]...)
	retry.Dir, retry.Env = cmd.Dir, cmd.Env
	retry.Stdin, retry.Stdout, retry.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	attr := *cmd.SysProcAttr
	attr.CreationFlags &^= windows.CREATE_BREAKAWAY_FROM_JOB
	retry.SysProcAttr = &attr
	return retry, retry.Start()
}

func isBrokenPipe(err error) bool {
	return errors.Is(err, windows.ERROR_BROKEN_PIPE) || errors.Is(err, windows.ERROR_NO_DATA)
}

// listenStopAsk creates the shim's stop event and turns each setting of it into a stopAsk on sigs.
// An event of that name that already exists is someone else's: the shim refuses to start.
func listenStopAsk(h Handle, sigs chan<- os.Signal) (func(), error) {
	name, err := windows.UTF16PtrFromString(stopEventName(h))
	if err != nil {
		return nil, err
	}
	ev, err := windows.CreateEvent(nil, 0, 0, name) // auto-reset: one stop ask per setting
	if err != nil {
		if ev != 0 {
			windows.CloseHandle(ev)
		}
		return nil, fmt.Errorf("create the stop event %s: %w", stopEventName(h), err)
	}
	quit, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(ev)
		return nil, fmt.Errorf("create an event: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			i, err := windows.WaitForMultipleObjects([]windows.Handle{ev, quit}, false, windows.INFINITE)
			if err != nil || i != windows.WAIT_OBJECT_0 {
				return
			}
			select {
			case sigs <- stopAsk:
			default: // a stop ask is already pending
			}
		}
	}()
	return func() {
		_ = windows.SetEvent(quit)
		<-done
		windows.CloseHandle(ev)
		windows.CloseHandle(quit)
	}, nil
}

// setStopEvent is the daemon's stop ask to the shim h (signalVerified checked its identity).
func setStopEvent(h Handle) error {
	name, err := windows.UTF16PtrFromString(stopEventName(h))
	if err != nil {
		return err
	}
	ev, err := windows.OpenEvent(windows.EVENT_MODIFY_STATE, false, name)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
		return fmt.Errorf("shim pid %d has no stop event %s (it is ending): %w", h.PID, stopEventName(h), ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("open the stop event of shim pid %d: %w", h.PID, err)
	}
	defer windows.CloseHandle(ev)
	if err := windows.SetEvent(ev); err != nil {
		return fmt.Errorf("set the stop event of shim pid %d: %w", h.PID, err)
	}
	return nil
}

const jobObjectTerminate = 0x0008 // JOB_OBJECT_TERMINATE; x/sys/windows does not name it

var (
	kernel32           = windows.NewLazySystemDLL("kernel32.dll")
	procCreateJobObjW  = kernel32.NewProc("CreateJobObjectW")
	procOpenJobObjectW = kernel32.NewProc("OpenJobObjectW")
	procAttachConsole  = kernel32.NewProc("AttachConsole")
	procFreeConsole    = kernel32.NewProc("FreeConsole")
)

// killTree terminates the job object of st's attempt: the runner and everything it started, at
// once. The shim then records the exit. No job of that name: the shim and its runner are gone.
func killTree(st ShimState) error {
	name, err := windows.UTF16PtrFromString(jobName(st.AttemptID))
	if err != nil {
		return err
	}
	r, _, e := procOpenJobObjectW.Call(jobObjectTerminate, 0, uintptr(unsafe.Pointer(name)))
	if r == 0 {
		if errors.Is(e, windows.ERROR_FILE_NOT_FOUND) {
			return fmt.Errorf("job object %s: %w", jobName(st.AttemptID), ErrNotRunning)
		}
		return fmt.Errorf("open job object %s: %w", jobName(st.AttemptID), e)
	}
	job := windows.Handle(r)
	defer windows.CloseHandle(job)
	if err := windows.TerminateJobObject(job, treeKilledCode); err != nil {
		return fmt.Errorf("terminate job object %s: %w", jobName(st.AttemptID), err)
	}
	return nil
}

// runnerTree is the started run.cmd and everything it starts, held in a job object of its own
// that nothing in it may leave, and that ends with the shim (kill on close).
type runnerTree struct {
	cmd  *exec.Cmd
	job  windows.Handle
	proc windows.Handle
}

// startRunner starts cmd suspended, puts it in the attempt's new job object and only then lets
// it run, so nothing it starts is ever outside the job.
func startRunner(cmd *exec.Cmd, a shimArgs) (*runnerTree, error) {
	if a.uid >= 0 || a.cgroup.V2 != "" {
		return nil, errors.New("per-slot runner users and cgroups do not exist on Windows: runners run as the daemon's account (daemon.runner_user = \"daemon\")")
	}
	job, err := createJob(jobName(a.attemptID))
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP,
		HideWindow:    true,
	}
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	t := &runnerTree{cmd: cmd, job: job}
	pid := cmd.Process.Pid
	t.proc, err = windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, t.proc)
	}
	if err == nil {
		err = resumeProcess(uint32(pid))
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.close()
		return nil, fmt.Errorf("put the runner (pid %d) in job object %s: %w", pid, jobName(a.attemptID), err)
	}
	return t, nil
}

// createJob creates the named job object, killing its processes when its last handle closes. A
// job of that name that already exists is someone else's: refused.
func createJob(name string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return 0, err
	}
	r, _, e := procCreateJobObjW.Call(0, uintptr(unsafe.Pointer(p)))
	if r == 0 {
		return 0, fmt.Errorf("create job object %s: %w", name, e)
	}
	job := windows.Handle(r)
	if errors.Is(e, windows.ERROR_ALREADY_EXISTS) {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("job object %s already exists: another process made it, so it is not this runner's", name)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("set the limits of job object %s: %w", name, err)
	}
	return job, nil
}

// resumeProcess resumes the threads of a process started suspended (it has one).
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("open thread %d: %w", te.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resume thread %d: %w", te.ThreadID, err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of pid %d to resume", pid)
	}
	return nil
}

// askStop sends the runner's process group Ctrl-Break on its console, which the actions runner
// takes as a request to stop; a runner without a console cannot be asked, so its job is ended.
func (t *runnerTree) askStop() (string, error) {
	pid := uint32(t.cmd.Process.Pid)
	err := ctrlBreak(pid)
	if err == nil {
		return "Ctrl-Break", nil
	}
	if terr := windows.TerminateJobObject(t.job, treeKilledCode); terr != nil {
		return "", fmt.Errorf("send Ctrl-Break to the runner (%v), then end its job object: %w", err, terr)
	}
	return fmt.Sprintf("ended its job object: no Ctrl-Break (%v)", err), nil
}

// ctrlBreak sends Ctrl-Break to the process group pid leads, from pid's console.
func ctrlBreak(pid uint32) error {
	procFreeConsole.Call() // the shim has none (DETACHED_PROCESS); AttachConsole needs none
	if r, _, e := procAttachConsole.Call(uintptr(pid)); r == 0 {
		return fmt.Errorf("attach to the console of pid %d: %w", pid, e)
	}
	defer procFreeConsole.Call()
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, pid)
}

// awaitExitAndSweep waits for run.cmd's exit (the handle keeps its pid from reuse) and terminates
// the job: whatever the finished job left running.
func (t *runnerTree) awaitExitAndSweep() {
	if ev, err := windows.WaitForSingleObject(t.proc, windows.INFINITE); err == nil && ev == windows.WAIT_OBJECT_0 {
		_ = windows.TerminateJobObject(t.job, treeKilledCode)
	}
}

func (t *runnerTree) oomKills(*slog.Logger) uint64 { return 0 }

func (t *runnerTree) close() {
	if t.proc != 0 {
		windows.CloseHandle(t.proc)
	}
	windows.CloseHandle(t.job)
}
