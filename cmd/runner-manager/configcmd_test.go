package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/golden"
)

func TestConfigPrint(t *testing.T) {
	t.Setenv("RUNNER_MANAGER_MAX_RUNNERS", "9")
	// The example as installed, chmod 600: git keeps it 0644, and its env values would warn.
	testdata := installed(t, map[string]installFile{"config.yaml": {from: "../../examples/config.yaml", mode: 0o600}}, "testdata")[0]
	for _, format := range []string{"toml", "json"} {
		t.Run(format, func(t *testing.T) {
			stdout, stderr, code := execute(t, "config", "print", "--config", "config.yaml", "--format", format)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if strings.Contains(stdout, "/opt/hostedtoolcache") {
				t.Errorf("a target env value was printed:\n%s", stdout)
			}
			golden.Check(t, filepath.Join(testdata, "config-print."+format+".golden"), []byte(stdout), *update)
		})
	}
}

func TestConfigPrintFailures(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "print", "--config", "../../examples/invalid/typo-key.toml"}, exitFailure, `typo-key.toml:8:1: target "api": unknown key "max_runner"`},
		{[]string{"config", "print", "--config", t.TempDir() + "/none.toml"}, exitUsage, "does not exist"},
		{[]string{"config", "print", "--config", "../../examples/config.toml", "--format", "ini"}, exitUsage, `unknown --format "ini"`},
	} {
		_, stderr, code := execute(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// files returns a writer of chmod 600 files in a fresh directory, returning each file's path.
func files(t *testing.T) func(name, body string) string {
	dir := t.TempDir()
	return func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func TestConfigDiff(t *testing.T) {
	write := files(t)
	write("token", "x")
	base := "[daemon]\nstate_dir = \"/var/lib/rm\"\nlog_level = \"info\"\n[github]\ntoken_file = \"token\"\n" +
		"[[target]]\nname = \"api\"\nrepository = \"acme/api\"\nmax_runners = 2\n[target.env]\nK = \"s3cret\"\n"
	cur := write("cur.toml", base)
	next := write("next.toml", strings.NewReplacer(`"info"`, `"debug"`, "max_runners = 2", "max_runners = 3",
		`"/var/lib/rm"`, `"/srv/rm"`, `"s3cret"`, `"other"`).Replace(base))
	stdout, stderr, code := execute(t, "config", "diff", "--config", cur, next)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	golden.Check(t, "testdata/config-diff.golden", []byte(stdout), *update)
	if strings.Contains(stdout, "s3cret") || strings.Contains(stdout, "other") {
		t.Fatalf("an env value was printed:\n%s", stdout)
	}
	if stdout, _, code := execute(t, "config", "diff", "--config", cur, cur); code != exitOK || !strings.Contains(stdout, "no change") {
		t.Fatalf("same file: exit %d, %q", code, stdout)
	}
	empty := write("empty.toml", "# nothing yet\n")
	if _, stderr, code := execute(t, "config", "diff", "--config", cur, empty); code != exitFailure || !strings.Contains(stderr, "holds no settings") {
		t.Fatalf("empty file: exit %d, %q", code, stderr)
	}
}
