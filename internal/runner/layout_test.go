package runner

import (
	"slices"
	"strings"
	"testing"
)

// Each OS's package as actions/runner releases name it (actions-runner-<os>-<arch>-<version>
// <archive>), and the script that starts it.
func TestLayoutNamesEachPlatformsPackage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		goos, goarch              string
		os, arch, archive, script string
		execBit                   bool
	}{
		{"linux", "amd64", "linux", "x64", ".tar.gz", "run.sh", true},
		{"linux", "arm64", "linux", "arm64", ".tar.gz", "run.sh", true},
		{"linux", "arm", "linux", "arm", ".tar.gz", "run.sh", true},
		{"darwin", "amd64", "osx", "x64", ".tar.gz", "run.sh", true},
		{"darwin", "arm64", "osx", "arm64", ".tar.gz", "run.sh", true},
		{"windows", "amd64", "win", "x64", ".zip", "run.cmd", false},
		{"windows", "arm64", "win", "arm64", ".zip", "run.cmd", false},
	}
	for _, tt := range tests {
		l := layoutFor(tt.goos)
		gotOS, gotArch := platformOf(tt.goos, tt.goarch)
		if gotOS != tt.os || gotArch != tt.arch || l.archive != tt.archive || l.runScript != tt.script || l.execBit != tt.execBit {
			t.Errorf("%s/%s: actions-runner-%s-%s%s started by %s (exec bit %v), want actions-runner-%s-%s%s started by %s (exec bit %v)",
				tt.goos, tt.goarch, gotOS, gotArch, l.archive, l.runScript, l.execBit, tt.os, tt.arch, tt.archive, tt.script, tt.execBit)
		}
		if back := layoutOfPackage(tt.os); back.goos != tt.goos {
			t.Errorf("the package OS %q maps back to %q, want %q", tt.os, back.goos, tt.goos)
		}
	}
}

// run.sh is executed itself; run.cmd through cmd.exe /c (%ComSpec%, else System32's).
func TestRunCommandByOS(t *testing.T) {
	t.Parallel()
	if got := layoutFor("linux").runCommand("/r/runner").Args; !slices.Equal(got, []string{"/r/runner/run.sh"}) {
		t.Errorf("linux: %q", got)
	}
	win := layoutFor("windows")
	if got := win.runCommand("/r/runner").Args; len(got) != 3 || got[1] != "/c" || got[2] != "/r/runner/run.cmd" {
		t.Errorf("windows: %q, want cmd.exe /c <root>/run.cmd", got)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := win.comSpec(getenv); got != `C:\Windows\System32\cmd.exe` {
		t.Errorf("no ComSpec, no SystemRoot: %s", got)
	}
	env["SystemRoot"] = `D:\Win`
	if got := win.comSpec(getenv); got != `D:\Win\System32\cmd.exe` {
		t.Errorf("SystemRoot only: %s", got)
	}
	env["ComSpec"] = `E:\cmd.exe`
	if got := win.comSpec(getenv); got != `E:\cmd.exe` {
		t.Errorf("ComSpec: %s", got)
	}
}

// A runner inherits only the allowlist: on Windows what a Windows process needs (SystemRoot, TEMP,
// ...; names matched regardless of case, as Windows does), never a credential.
func TestInheritedEnvIsTheAllowlist(t *testing.T) {
	t.Parallel()
	daemon := []string{"Path=C:\\bin", "SYSTEMROOT=C:\\Windows", "TEMP=C:\\t", "=C:=C:\\x", "GITHUB_TOKEN=ghp_secret",
		"RUNNER_MANAGER_TOKEN=x", "HOME=/root", "path=/also"}
	if got, want := layoutFor("windows").inheritedEnv(daemon), []string{"Path=C:\\bin", "SYSTEMROOT=C:\\Windows", "TEMP=C:\\t", "path=/also"}; !slices.Equal(got, want) {
		t.Errorf("windows: %q, want %q", got, want)
	}
	if got, want := layoutFor("linux").inheritedEnv(daemon), []string{"HOME=/root"}; !slices.Equal(got, want) {
		t.Errorf("linux: %q, want %q (names are case-sensitive)", got, want)
	}
}

// The Windows kernel objects a shim and the daemon agree on are named by what the journal holds:
// the stop event by the shim's identity (pid and start time, so a reused pid names another event),
// the job object by the attempt. Object names may not hold a backslash.
func TestWindowsObjectNames(t *testing.T) {
	t.Parallel()
	a, b := Handle{PID: 300, StartTime: 134410211417570070}, Handle{PID: 300, StartTime: 134410211417570071}
	names := []string{stopEventName(a), stopEventName(b), jobName("att-1"), jobName("att-2")}
	for i, n := range names {
		if strings.Contains(n, `\`) || len(n) > 260 {
			t.Errorf("%q is not an object name", n)
		}
		for _, m := range names[:i] {
			if n == m {
				t.Errorf("two identities share the name %q", n)
			}
		}
	}
	if got := jobName("att-1"); got != "runner-manager-att-1" {
		t.Errorf("job object %q, want runner-manager-<attempt id> (docs/runner-processes.md)", got)
	}
}
