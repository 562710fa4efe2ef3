package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// layout is everything about a runner package and its start that differs by OS, in one place:
// GitHub's name for the OS, the archive it ships as, the script that starts it and how that
// script is run, and which of the daemon's variables a runner needs to work at all.
type layout struct {
	goos      string // Go's name: "linux", "darwin", "windows"
	githubOS  string // GitHub's spelling in the runner downloads: "linux", "osx", "win"
	archive   string // ".tar.gz" or ".zip" (actions/runner's releases)
	runScript string // the entry point in the package's root: "run.sh" or "run.cmd"
	// execBit: the run script must carry an executable permission bit (not on Windows, where
	// Go reports none and cmd.exe runs the script).
	execBit bool
	// envAllowlist is what a runner inherits from the daemon's environment by default; the
	// daemon's environment may hold credentials (GITHUB_TOKEN, RUNNER_MANAGER_*), so nothing
	// else passes. Windows names are matched without regard to case, as Windows does.
	envAllowlist []string
}

var unixEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// windowsEnv: without SystemRoot a Windows process cannot even start Winsock, and .NET (the
// actions runner) needs the profile and program directories; ComSpec and PATHEXT let run.cmd
// start what it starts.
var windowsEnv = []string{
	"PATH", "PATHEXT", "SystemRoot", "SystemDrive", "windir", "ComSpec", "TEMP", "TMP",
	"USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
	"ProgramData", "ProgramFiles", "ProgramFiles(x86)", "ProgramW6432", "CommonProgramFiles",
	"CommonProgramFiles(x86)", "CommonProgramW6432", "COMPUTERNAME", "NUMBER_OF_PROCESSORS",
	"PROCESSOR_ARCHITECTURE", "PROCESSOR_IDENTIFIER", "OS", "TZ",
}

// layoutFor is the layout of Go's goos: Windows ships a .zip started by run.cmd, every other OS
// (Linux, macOS) a .tar.gz started by run.sh.
func layoutFor(goos string) layout {
	switch goos {
	case "windows":
		return layout{goos: goos, githubOS: "win", archive: ".zip", runScript: "run.cmd", envAllowlist: windowsEnv}
	case "darwin":
		return layout{goos: goos, githubOS: "osx", archive: ".tar.gz", runScript: "run.sh", execBit: true, envAllowlist: unixEnv}
	default:
		return layout{goos: goos, githubOS: goos, archive: ".tar.gz", runScript: "run.sh", execBit: true, envAllowlist: unixEnv}
	}
}

// layoutOfPackage is the layout of a package by the OS GitHub names in it ("win" ships a .zip).
func layoutOfPackage(githubOS string) layout {
	for _, goos := range []string{"windows", "darwin"} {
		if l := layoutFor(goos); l.githubOS == githubOS {
			return l
		}
	}
	return layoutFor(githubOS)
}

// hostLayout is this host's.
var hostLayout = layoutFor(runtime.GOOS)

// runCommand is the command that starts the run script of the runner rooted at root: the script
// itself where it is executable, through cmd.exe /c on Windows (a .cmd is not a program, and Go
// refuses to guess how cmd.exe would parse arguments to one).
func (l layout) runCommand(root string) *exec.Cmd {
	script := filepath.Join(root, l.runScript)
	if l.goos != "windows" {
		return exec.Command(script)
	}
	return exec.Command(l.comSpec(os.Getenv), "/c", script)
}

// comSpec is cmd.exe: %ComSpec%, else System32's under %SystemRoot%.
func (l layout) comSpec(getenv func(string) string) string {
	if c := getenv("ComSpec"); c != "" {
		return c
	}
	root := getenv("SystemRoot")
	if root == "" {
		root = `C:\Windows`
	}
	return root + `\System32\cmd.exe`
}

// inheritedEnv is the allowlisted part of environ (a daemon's os.Environ()).
func (l layout) inheritedEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue // Windows' per-drive "=C:=C:\dir" entries have no name
		}
		for _, want := range l.envAllowlist {
			if k == want || l.goos == "windows" && strings.EqualFold(k, want) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// stopEventName is the shim's stop event, named by its identity, which the daemon journals: the
// daemon can ask a shim it started before a restart. Unprefixed names live in the session's
// namespace; a service and the shims it starts share session 0.
func stopEventName(h Handle) string {
	return "runner-manager-stop-" + strconv.Itoa(h.PID) + "-" + strconv.FormatUint(h.StartTime, 10)
}

// jobName is the job object of an attempt's runner, named so the daemon can end the runner's tree
// after a restart (Kill).
func jobName(attemptID string) string { return "runner-manager-" + attemptID }
