//go:build e2e && linux

package windows

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// TestVersionUnderWine: runner-manager.exe runs under wine and names its build: the linked
// version, windows/amd64, the Go it was built with; --version is the one line selfupdate reads.
func TestVersionUnderWine(t *testing.T) {
	w := newWine(t)
	exe := BuildExe(t)
	stdout, stderr, code := w.Run(t, t.TempDir(), exe, "version", "--json")
	if code != 0 {
		t.Fatalf("runner-manager.exe version --json exited %d under wine; stderr:\n%s", code, stderr)
	}
	var info struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
		Platform  string `json:"platform"`
	}
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("version --json printed no JSON object: %v\n%s", err, stdout)
	}
	if info.Version != harness.Version || info.Platform != "windows/amd64" || info.GoVersion != runtime.Version() {
		t.Fatalf("version --json = %+v; want version %s, platform windows/amd64, go %s", info, harness.Version, runtime.Version())
	}
	stdout, stderr, code = w.Run(t, t.TempDir(), exe, "--version")
	if want := "runner-manager " + harness.Version + "\n"; code != 0 || stdout != want {
		t.Fatalf("runner-manager.exe --version = exit %d, %q (stderr %q); want exit 0, %q", code, stdout, stderr, want)
	}
}

// windowsConfig is a valid config for a Windows host; linuxConfig is the same file with Linux
// paths. validate --offline must accept both, on their own platforms, with the same summary.
const windowsConfig = `[daemon]
state_dir = 'C:\ProgramData\runner-manager'
runner_user = "daemon"
max_runners = 2

[github]
token_file = 'C:\ProgramData\runner-manager\token'

[[target]]
name = "win"
repository = "acme/win"
labels = ["windows", "x64"]
max_runners = 2
`

var linuxConfig = strings.NewReplacer(`C:\ProgramData\runner-manager`, "/var/lib/runner-manager", `\token`, "/token").Replace(windowsConfig)

// TestValidateOfflineUnderWine: `validate --offline` of runner-manager.exe under wine gives the
// exit codes and messages the Linux build gives. A valid Windows config passes with the summary
// the Linux build prints for its Linux twin (its warnings may differ: runner_user = "daemon" says
// what the daemon's account is on each OS). The files of examples/invalid, given at once (one wine
// start keeps the test short), fail with exit 1 and every one of their golden messages, in order
// (cmd/runner-manager's TestValidateInvalidExamples pins them on Linux), plus only the Windows
// rules a Linux example breaks (windowsRules).
func TestValidateOfflineUnderWine(t *testing.T) {
	w := newWine(t)
	w.Env = append(w.Env, "GITHUB_ACTIONS=") // text output, as the golden files are
	exe := BuildExe(t)

	winDir, linuxDir := t.TempDir(), t.TempDir()
	for dir, text := range map[string]string{winDir: windowsConfig, linuxDir: linuxConfig} {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	native := exec.Command(harness.Build(t), "validate", "--offline", "--config", "config.toml")
	native.Dir, native.Env = linuxDir, w.Env
	want, err := native.Output()
	if err != nil {
		t.Fatalf("the Linux build rejects the Linux twin of the Windows config: %v\n%s", err, want)
	}
	stdout, stderr, code := w.Run(t, winDir, exe, "validate", "--offline", "--config", "config.toml")
	if code != 0 || withoutWarnings(stdout) != withoutWarnings(string(want)) || stderr != "" {
		t.Fatalf("validate --offline of a valid Windows config under wine: exit %d\n--- stdout\n%s--- stderr\n%s--- want exit 0 and (warnings aside)\n%s", code, stdout, stderr, want)
	}

	examples := filepath.Join(moduleRoot(t), "examples", "invalid")
	files, _ := filepath.Glob(filepath.Join(examples, "*.*"))
	var args []string
	var golden strings.Builder
	for _, f := range files {
		// --offline does not look for secret files, so the missing App key is checked without it.
		if strings.HasSuffix(f, ".golden") || filepath.Base(f) == onlineExample {
			continue
		}
		args = append(args, filepath.Base(f))
		golden.WriteString(readGolden(t, f))
	}
	if len(args) < 10 {
		t.Fatalf("found %d invalid examples in %s, want at least 10", len(args), examples)
	}
	for _, run := range [][]string{append([]string{"validate", "--offline"}, args...), {"validate", onlineExample}} {
		stdout, stderr, code := w.Run(t, examples, exe, run...)
		if code != 1 || stderr != "" {
			t.Fatalf("runner-manager.exe %s under wine: exit %d, stderr %q; want exit 1 and no stderr", strings.Join(run, " "), code, stderr)
		}
		want := golden.String()
		if run[1] == onlineExample {
			want = readGolden(t, filepath.Join(examples, onlineExample))
		}
		if extra := windowsOnly(t, stdout, want); len(extra) > 0 {
			t.Fatalf("runner-manager.exe %s under wine printed what neither examples/invalid's golden files nor a Windows rule say:\n%s\n--- got\n%s--- want (plus the Windows rules)\n%s",
				strings.Join(run, " "), strings.Join(extra, "\n"), stdout, want)
		}
	}
}

// windowsRules are the problems config finds in a Linux example only when it checks it for
// Windows: runners run as the service's account there (runner_user must say "daemon"), and the
// container executor needs Linux.
var windowsRules = []string{`daemon.runner_user must be "daemon" on Windows`, `needs Linux (this config is checked for windows)`}

// windowsOnly checks got, validate's text output under wine, against want, the golden output of
// the same files on Linux: every golden problem line is printed, in order, and every file is
// summarised as invalid; it returns the lines that are neither a golden line nor a Windows rule.
// The summaries' counts include the Windows rules' errors, so only their file names are compared.
func windowsOnly(t *testing.T, got, want string) []string {
	t.Helper()
	gotLines, wantLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n"), strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	var extra []string
	i := 0
	for _, line := range gotLines {
		switch {
		case i < len(wantLines) && line == wantLines[i]:
			i++
		case i < len(wantLines) && isSummary(wantLines[i]) && isSummary(line) && fileOf(line) == fileOf(wantLines[i]):
			i++
		case slices.ContainsFunc(windowsRules, func(r string) bool { return strings.Contains(line, r) }):
		default:
			extra = append(extra, line)
		}
	}
	if i < len(wantLines) {
		t.Fatalf("under wine validate did not print %q (nor anything after it) of the golden output:\n%s", wantLines[i], got)
	}
	return extra
}

// isSummary reports whether line is validate's per-file verdict ("NAME: invalid (N errors, ...)").
func isSummary(line string) bool { return strings.Contains(line, ": invalid (") }

func fileOf(summary string) string {
	f, _, _ := strings.Cut(summary, ": invalid (")
	return f
}

// onlineExample is the invalid example only a check of the host's files finds (validate without
// --offline): its github.private_key_file does not exist.
const onlineExample = "missing-private-key.toml"

// readGolden is the golden output beside example f (examples/invalid/NAME.golden).
func readGolden(t *testing.T, f string) string {
	t.Helper()
	g, err := os.ReadFile(strings.TrimSuffix(f, filepath.Ext(f)) + ".golden")
	if err != nil {
		t.Fatal(err)
	}
	return string(g)
}

// withoutWarnings drops validate's warning lines (FILE:LINE:COL: warning: ...).
func withoutWarnings(out string) string {
	var keep []string
	for _, line := range strings.SplitAfter(out, "\n") {
		if !strings.Contains(line, ": warning: ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
