//go:build e2e && linux

package windows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/daemonproc"
)

// wineFix says how to get what these tests need; every failure to find wine ends with it.
const wineFix = "run `make wine-tools` (installs wine, wine64 and gcc-mingw-w64-x86-64, makes the prefix bin/wineprefix and puts the ProcessPrng DLL in it)"

// Wine is the wine installation and prefix the tests run Windows programs in.
type Wine struct {
	Prefix string   // bin/wineprefix of the checkout, made by `make wine-tools`
	Env    []string // the test's environment plus the wine settings
}

// newWine finds wine and the prefix `make wine-tools` made, failing the test (never skipping)
// when either is missing: a CI host without them must not pass by running nothing.
func newWine(t testing.TB) *Wine {
	t.Helper()
	root := moduleRoot(t)
	if _, err := exec.LookPath("wine"); err != nil {
		t.Fatalf("wine is not installed: %s", wineFix)
	}
	prefix := filepath.Join(root, "bin", "wineprefix")
	dll := filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); err != nil {
		t.Fatalf("the wine prefix has no ProcessPrng DLL (%v), so every Go Windows binary dies at start under wine 8.0: %s", err, wineFix)
	}
	env := append(harness.CleanEnviron(),
		"WINEPREFIX="+prefix,
		"WINEDEBUG=-all",                      // wine's own fixme/err lines would mix with the program's output
		"WINEDLLOVERRIDES=bcryptprimitives=n", // the prefix's ProcessPrng DLL instead of wine's builtin
		"DISPLAY=",                            // console programs only: never reach for an X server
	)
	w := &Wine{Prefix: prefix, Env: env}
	warm.once.Do(func() { warm.err = w.start() })
	if warm.err != nil {
		t.Fatalf("start wine in %s: %v: %s", prefix, warm.err, wineFix)
	}
	return w
}

// warm is the suite's one start of the prefix's wineserver and services.
var warm struct {
	once sync.Once
	err  error
}

// start starts the prefix's wineserver, persistent until stopWine, and its services (one cmd /c
// exit), with their output on /dev/null. Otherwise the first Windows program a test runs starts
// them, they inherit its stdout and stderr, and they hold the test's pipes open after the program
// exits (the daemon test's wait ended in "WaitDelay expired before I/O complete"). It also takes
// the seconds of a cold wine start out of every test's timings.
func (w *Wine) start() error {
	for _, args := range [][]string{{"wineserver", "-p"}, {"wine", "cmd", "/c", "exit"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = w.Env
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// Run runs exe args... under wine in dir and returns its stdout, stderr and exit code.
func (w *Wine) Run(t testing.TB, dir, exe string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wine", append([]string{exe}, args...)...)
	cmd.Dir, cmd.Env = dir, w.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s under wine: %v\n%s", filepath.Base(exe), err, stderr.String())
	}
	return crlf(stdout.String()), crlf(stderr.String()), cmd.ProcessState.ExitCode()
}

// crlf turns a console's \r\n into \n, so output compares with what the Linux build prints.
func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// WinPath is how a Windows program under wine names a Linux path: wine maps / to drive Z:.
func WinPath(linux string) string {
	return `Z:` + strings.ReplaceAll(linux, "/", `\`)
}

// stopWine ends the prefix's wineserver and every Windows process still running in it (a daemon
// or runner a failed test left): nothing the suite started may outlive it.
func stopWine() {
	root, err := daemonproc.ModuleRoot(sourceDir())
	if err != nil {
		return
	}
	cmd := exec.Command("wineserver", "-k")
	cmd.Env = append(os.Environ(), "WINEPREFIX="+filepath.Join(root, "bin", "wineprefix"))
	_ = cmd.Run()
}

// BuildExe is runner-manager.exe for windows/amd64, built once per test process.
func BuildExe(t testing.TB) string {
	t.Helper()
	return harness.BuildFor(t, "windows", "amd64")
}

func moduleRoot(t testing.TB) string {
	t.Helper()
	root, err := daemonproc.ModuleRoot(sourceDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sourceDir is this package's source directory.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}
