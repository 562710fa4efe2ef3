package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/daemon"
	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/selfupdate"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// execute runs the real command tree as main does and returns stdout, stderr and the exit code.
func execute(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return executeIn(t, strings.NewReader(""), args...)
}

// executeIn is execute with stdin.
func executeIn(t *testing.T, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runCommand(newRootCmd(), args, stdin, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestValidateInvalidExamples runs every file of examples/invalid through the real validate
// command: each must exit 1 with exactly its golden message.
func TestValidateInvalidExamples(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	t.Chdir("../../examples/invalid") // so the golden files name the file as an operator would type it
	files, _ := filepath.Glob("*.*")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden") {
			continue
		}
		n++
		t.Run(f, func(t *testing.T) {
			stdout, stderr, code := execute(t, "validate", "--config", f)
			if code != exitFailure || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want exit 1 and no stderr", code, stderr)
			}
			golden.Check(t, strings.TrimSuffix(f, filepath.Ext(f))+".golden", []byte(stdout), *update)
		})
	}
	if n < 10 {
		t.Fatalf("found %d invalid examples, want at least 10", n)
	}
}

// TestValidateFormats pins each output format for a valid file with a warning and an invalid one.
func TestValidateFormats(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	t.Chdir("testdata/validate")
	for _, tc := range []struct {
		name, file, format string
		code               int
	}{
		{"valid-text", "warning.toml", "text", exitOK},
		{"valid-json", "warning.toml", "json", exitOK},
		{"valid-github", "warning.toml", "github", exitOK},
		{"invalid-text", "invalid.yaml", "text", exitFailure},
		{"invalid-json", "invalid.yaml", "json", exitFailure},
		{"invalid-github", "invalid.yaml", "github", exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := execute(t, "validate", "--config", tc.file, "--format", tc.format)
			if code != tc.code || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want exit %d", code, stderr, tc.code)
			}
			golden.Check(t, tc.name+".golden", []byte(stdout), *update)
		})
	}
}

func TestValidateGitHubFormatChosenInActions(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Chdir("testdata/validate")
	stdout, _, code := execute(t, "validate", "invalid.yaml")
	if code != exitFailure || !strings.HasPrefix(stdout, "::error file=invalid.yaml,line=") {
		t.Fatalf("exit %d, output %q: want workflow commands when GITHUB_ACTIONS=true", code, stdout)
	}
}

func TestValidateExamplesAreValid(t *testing.T) {
	for _, f := range []string{"../../examples/config.toml", "../../examples/config.yaml", "../../examples/container.toml"} {
		stdout, stderr, code := execute(t, "validate", f)
		if code != exitOK {
			t.Errorf("validate %s: exit %d\n%s%s", f, code, stdout, stderr)
		}
	}
}

func TestValidateUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"validate", "--config", filepath.Join(dir, "nope.toml")}, "does not exist: pass --config PATH"},
		{"bad extension", []string{"validate", writeFile(t, dir, "c.ini", "x", 0o600)}, `unsupported extension ".ini"`},
		{"bad format flag", []string{"validate", "--format", "xml", "x.toml"}, `unknown --format "xml"`},
		{"arg and flag disagree", []string{"validate", "--config", "a.toml", "b.toml"}, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := execute(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 mentioning %q", code, stderr, tc.want)
			}
		})
	}
}

// TestValidateTokenFilePermissions covers what git cannot store: a token file readable by
// everyone is an error, one readable by its group a warning.
func TestValidateTokenFilePermissions(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := "[github]\ntoken_file = \"token\"\n"
	writeFile(t, dir, "c.toml", cfg, 0o600)
	for _, tc := range []struct {
		mode os.FileMode
		code int
		want string
	}{
		{0o644, exitFailure, `c.toml:2:1: github.token_file "token" is readable by every user (mode 0644): run chmod 600 on it`},
		{0o640, exitOK, `c.toml:2:1: warning: github.token_file "token" is readable by its group (mode 0640)`},
		{0o600, exitOK, "c.toml: valid (0 targets, 0 enabled; 0 warnings)"},
	} {
		writeFile(t, dir, "token", "ghp_x", tc.mode)
		stdout, _, code := execute(t, "validate", "c.toml")
		if code != tc.code || !strings.Contains(stdout, tc.want) {
			t.Errorf("mode %04o: exit %d, output %q; want exit %d with %q", tc.mode, code, stdout, tc.code, tc.want)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // WriteFile keeps the mode of an existing file
		t.Fatal(err)
	}
	return p
}

// TestExitCodesDocumented keeps docs/exit-codes.md in step with exitcodes.go: every constant's
// number appears as a row of the table.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]int{"exitOK": exitOK, "exitFailure": exitFailure, "exitUsage": exitUsage,
		"exitConflict": exitConflict, "exitNotAuthed": exitNotAuthed, "exitLocalState": exitLocalState, "exitNotReady": exitNotReady, "exitUnavailable": exitUnavailable,
		"exitNotRunning": exitNotRunning, "exitUpgradePending": exitUpgradePending} {
		if !strings.Contains(string(doc), "\n| "+strconv.Itoa(code)+" |") {
			t.Errorf("%s (%d) has no row in docs/exit-codes.md", name, code)
		}
	}
	src, err := os.ReadFile("exitcodes.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), " = "); n != 10 {
		t.Errorf("exitcodes.go defines %d codes, this test knows 10: add the new one here and to docs/exit-codes.md", n)
	}
}

// TestValidateOffline is the CI case: the secret files exist only on the host, so --offline
// passes a config whose token file is missing, while plain validate (the daemon's view) fails.
func TestValidateOffline(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.toml", "[github]\ntoken_file = \"/etc/runner-manager/nonexistent-token\"\n[webhook]\nlisten = \"127.0.0.1:0\"\nsecret_file = \"secret\"\n", 0o600)
	stdout, _, code := execute(t, "validate", cfg)
	if code != exitFailure || !strings.Contains(stdout, "does not exist") {
		t.Fatalf("without --offline: exit %d, output %q; want 1 with the missing file", code, stdout)
	}
	stdout, stderr, code := execute(t, "validate", "--offline", cfg)
	if code != exitOK || !strings.Contains(stdout, "valid (0 targets") {
		t.Fatalf("--offline: exit %d, output %q %q; want valid", code, stdout, stderr)
	}
	// The rules that need no host still apply offline.
	bad := writeFile(t, dir, "bad.toml", "[github]\ntoken_file = \"t\"\n[daemon]\nmax_runners = 0\n", 0o600)
	if stdout, _, code := execute(t, "validate", "--offline", bad); code != exitFailure || !strings.Contains(stdout, "max_runners must be at least 1") {
		t.Fatalf("--offline on an invalid file: exit %d, output %q", code, stdout)
	}
}

// TestValidateSeveralFilesAndStdin: every file is reported, the exit code is the worst outcome
// (2 over 1 over 0), - reads standard input.
func TestValidateSeveralFilesAndStdin(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	t.Chdir("testdata/validate")
	stdout, stderr, code := execute(t, "validate", "warning.toml", "invalid.yaml")
	if code != exitFailure || strings.Count(stdout, "warning.toml: valid") != 1 || strings.Count(stdout, "invalid.yaml: invalid") != 1 || stderr != "" {
		t.Fatalf("two files: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = execute(t, "validate", "warning.toml", "missing.toml", "invalid.yaml")
	if code != exitUsage || !strings.Contains(stderr, "missing.toml does not exist") || !strings.Contains(stdout, "invalid.yaml: invalid") {
		t.Fatalf("with a missing file: exit %d, stdout %q, stderr %q; want 2 and the others still reported", code, stdout, stderr)
	}
	stdout, _, code = execute(t, "validate", "--format", "json", "warning.toml", "invalid.yaml")
	var many []struct {
		File  string
		Valid bool
	}
	if err := json.Unmarshal([]byte(stdout), &many); err != nil || len(many) != 2 || !many[0].Valid || many[1].Valid || code != exitFailure {
		t.Fatalf("json for two files: %v %+v exit %d\n%s", err, many, code, stdout)
	}

	toml, _ := os.ReadFile("warning.toml")
	yaml, _ := os.ReadFile("invalid.yaml")
	for _, tc := range []struct {
		input []byte
		args  []string
		code  int
		want  string
	}{
		{toml, []string{"validate", "-"}, exitOK, "-: valid (2 targets"},
		{yaml, []string{"validate", "--input-format", "yaml", "-"}, exitFailure, "-: invalid"},
		{yaml, []string{"validate", "-"}, exitFailure, "-:"}, // YAML read as TOML is a positioned syntax error
		{toml, []string{"validate", "--input-format", "ini", "-"}, exitUsage, ""},
	} {
		stdout, stderr, code := executeIn(t, bytes.NewReader(tc.input), tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestValidateProjectsTheGitHubCost: validate says what the repository targets cost of the
// governor's ceiling, and when they do not fit, how far their intervals stretch.
func TestValidateProjectsTheGitHubCost(t *testing.T) {
	body := "[github]\ntoken_file = \"/dev/null\"\npoints_per_minute = 60\n"
	for i := range 30 {
		body += fmt.Sprintf("[[target]]\nname = \"r%d\"\nrepository = \"acme/r%d\"\nlabels = [\"linux\"]\npoll_interval = \"10s\"\n", i, i)
	}
	body += "[[target]]\nname = \"org\"\norganization = \"acme\"\nlabels = [\"linux\"]\n"
	cfg, err := config.LoadBytes("c.toml", []byte(body), config.Options{Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "  GitHub cost: 30 repository targets poll for 540 of 60 points/min; too many: 30 targets need 540 points/min at poll_interval 10s; the ceiling is 60: polling every 2m24s instead; plus 1 organization target, whose cost depends on their repository count (runner-manager verify reports it)"
	if got := projectedCost(cfg); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// A GHES api_url without /api/v3 validates with a notice naming the URL the daemon will use.
func TestValidateGHESURLNotice(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	dir := t.TempDir()
	writeFile(t, dir, "token", "x", 0o600)
	cfg := writeFile(t, dir, "c.toml", "[github]\napi_url = \"https://ghes.example\"\ntoken_file = \"token\"\n", 0o600)
	stdout, _, code := execute(t, "validate", cfg)
	if code != exitOK || !strings.Contains(stdout, `c.toml:2:1: warning: github.api_url "https://ghes.example" has no API path; runner-manager uses "https://ghes.example/api/v3"`) {
		t.Fatalf("exit %d, output %q; want 0 with the notice", code, stdout)
	}
	stdout, _, _ = execute(t, "config", "print", "--config", cfg)
	if !strings.Contains(stdout, `api_url = 'https://ghes.example/api/v3'`) {
		t.Fatalf("config print shows %q; want the normalised api_url", stdout)
	}
}

// TestValidateWarnsOfSecretsJobsCanRead: every job runs as a local user, so validate warns of a
// config file holding env values that every local user can read, and of a status listener on
// loopback without a token (issue 26 item 5); a chmod 600 env_file beside it is accepted.
func TestValidateWarnsOfSecretsJobsCanRead(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	want := installed(t, map[string]installFile{
		"secrets.toml": {from: "testdata/validate/secrets.toml", mode: 0o644},
		"runner.env":   {body: "DEPLOY_KEY=s3cret\n", mode: 0o600},
	}, "testdata/validate/secrets-text.golden")[0]
	stdout, stderr, code := execute(t, "validate", "--config", "secrets.toml")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want exit 0", code, stderr)
	}
	if strings.Contains(stdout, "s3cret") || strings.Contains(stdout, "hostedtoolcache") {
		t.Errorf("validate printed an env value:\n%s", stdout)
	}
	golden.Check(t, want, []byte(stdout), *update)
}

// installFile is a file installed() writes: from a file of the repository, or body.
type installFile struct {
	from, body string
	mode       os.FileMode
}

// installed changes to a new temp dir holding files at exactly their modes (git checks files out
// 0644 or 0664, whatever the config means them to be), and returns keep (repository paths) made
// absolute first, so goldens stay reachable.
func installed(t *testing.T, files map[string]installFile, keep ...string) []string {
	t.Helper()
	abs := make([]string, len(keep))
	for i, k := range keep {
		p, err := filepath.Abs(k)
		if err != nil {
			t.Fatal(err)
		}
		abs[i] = p
	}
	bodies := map[string][]byte{}
	for name, f := range files {
		bodies[name] = []byte(f.body)
		if f.from != "" {
			data, err := os.ReadFile(f.from)
			if err != nil {
				t.Fatal(err)
			}
			bodies[name] = data
		}
	}
	t.Chdir(t.TempDir())
	for name, f := range files {
		if err := os.WriteFile(name, bodies[name], f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return abs
}

// TestValidateBoundsAHugeValue: a 5 MB label is echoed cut to 64 bytes with its size, in every
// format (a pull-request annotation included), not as a 5.2 MB message (issue 28).
func TestValidateBoundsAHugeValue(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.toml", "[github.device_flow]\nclient_id = \"Iv1.x\"\n\n[[target]]\nname = \"web\"\nrepository = \"acme/web\"\nlabels = [\""+strings.Repeat("a", 5_242_880)+"\"]\n", 0o600)
	for _, format := range []string{"text", "json", "github"} {
		stdout, stderr, code := execute(t, "validate", "--format", format, path)
		if code != exitFailure {
			t.Errorf("%s: exit %d, want %d (stderr %.200s)", format, code, exitFailure, stderr)
		}
		if len(stdout) > 4096 || !strings.Contains(stdout, `…`) || !strings.Contains(stdout, "(5.2 MB, cut)") {
			t.Errorf("%s: %d bytes of output, want the label cut with its size noted: %.300s", format, len(stdout), stdout)
		}
	}
}

// TestDaemonExitCodes: each failure class of the daemon, wrapped as the daemon wraps it, exits with
// its documented code (docs/exit-codes.md); anything else exits 1, and no error exits 0.
func TestDaemonExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.Join(errors.New("start"), selfupdate.ErrUpgradePending), exitUpgradePending},
		{errors.Join(errors.New("load"), daemon.ErrConfigInvalid), exitFailure},
		{errors.Join(errors.New("load"), daemon.ErrConfigUnreadable), exitUsage},
		{errors.Join(errors.New("lock"), daemon.ErrConflict), exitConflict},
		{errors.Join(errors.New("github"), daemon.ErrNotAuthenticated), exitNotAuthed},
		{errors.Join(errors.New("journal"), daemon.ErrLocalState), exitLocalState},
		{errors.New("anything else"), exitFailure},
	} {
		var e *exitError
		if !errors.As(daemonExit(tc.err), &e) || e.code != tc.want {
			t.Errorf("daemonExit(%v) = %v, want exit %d", tc.err, daemonExit(tc.err), tc.want)
		}
	}
	if err := daemonExit(nil); err != nil {
		t.Errorf("daemonExit(nil) = %v", err)
	}
}
