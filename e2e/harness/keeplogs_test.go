package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failedTB is a test that has failed; it records what the harness logs for it.
type failedTB struct {
	testing.TB
	logged strings.Builder
}

func (f *failedTB) Failed() bool { return true }

func (f *failedTB) Logf(format string, args ...any) { fmt.Fprintf(&f.logged, format+"\n", args...) }

// A failed test prints the last tailLines lines of its daemon's output; with E2E_KEEP_LOGS set it
// also keeps the whole stdout and log, which its temporary directory would take with it, and says where.
func TestFailedDaemonKeepsItsWholeLogWhenAsked(t *testing.T) {
	var stdout, log strings.Builder
	for i := range 3 * tailLines {
		fmt.Fprintf(&stdout, "stdout line %d\n", i)
		fmt.Fprintf(&log, `{"msg":"log line %d"}`+"\n", i)
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "kept")
			if keep {
				t.Setenv(KeepLogsEnv, root)
			} else {
				t.Setenv(KeepLogsEnv, "")
			}
			logDir := t.TempDir()
			ft := &failedTB{TB: t}
			d := &Daemon{Bin: "runner-manager", ConfigPath: "config.toml", StateDir: t.TempDir(), PID: 4242, t: ft,
				StdoutPath: filepath.Join(logDir, "daemon.stdout"), StderrPath: filepath.Join(logDir, "daemon.stderr")}
			for path, text := range map[string]string{d.StdoutPath: stdout.String(), d.StderrPath: log.String()} {
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d.report()
			out := ft.logged.String()
			if strings.Contains(out, "stdout line 0\n") || !strings.Contains(out, fmt.Sprintf("stdout line %d\n", 3*tailLines-1)) {
				t.Fatalf("the failure should print only the tail of stdout:\n%s", out)
			}
			if !strings.Contains(out, KeepLogsEnv+"=<dir> keeps them all") {
				t.Errorf("the truncated tail does not say how to keep the whole log:\n%s", out)
			}
			kept, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(t.Name()), "daemon-pid4242-*"))
			if !keep {
				if len(kept) != 0 || strings.Contains(out, "kept in") {
					t.Fatalf("logs kept without %s: %v\n%s", KeepLogsEnv, kept, out)
				}
				return
			}
			if len(kept) != 1 || !strings.Contains(out, "the whole stdout and log are kept in "+kept[0]) {
				t.Fatalf("kept %v; the failure output should name the one kept directory:\n%s", kept, out)
			}
			for name, want := range map[string]string{"daemon.stdout": stdout.String(), "daemon.stderr": log.String()} {
				if got, err := os.ReadFile(filepath.Join(kept[0], name)); err != nil || string(got) != want {
					t.Errorf("kept %s: %d bytes (%v), want the whole %d bytes", name, len(got), err, len(want))
				}
			}
		})
	}
}
