package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadEnvFile loads a config (chmod 600) whose target "api" has env_file = "runner.env", a file
// holding content at mode, and the inline env lines given.
func loadEnvFile(t *testing.T, content string, mode os.FileMode, env string, opts Options) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	if content != "" {
		p := filepath.Join(dir, "runner.env")
		must(t, errors.Join(os.WriteFile(p, []byte(content), mode), os.Chmod(p, mode)))
	}
	body := target("env_file = \"runner.env\"\n")
	if env != "" {
		body += "[target.env]\n" + env
	}
	p := filepath.Join(dir, "c.toml")
	must(t, os.WriteFile(p, []byte(body), 0o600))
	if opts.Environ == nil {
		opts.Environ = func() []string { return nil }
	}
	return LoadWith(p, opts)
}

// env_file's KEY=VALUE lines are merged into env; a name in both is an error, never a silent
// choice; the file is a credential file; no message quotes a line of it.
func TestEnvFile(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		env           string
		want          string // the one problem, "" for none
		wantEnv       map[string]string
	}{
		{"merged with env", "# the deploy key\nA=1\n\nB=x=y \r\n", 0o600, "C = \"3\"\n", "",
			map[string]string{"A": "1", "B": "x=y ", "C": "3"}},
		{"alone", "A=1\n", 0o600, "", "", map[string]string{"A": "1"}},
		{"empty value", "A=\n", 0o600, "", "", map[string]string{"A": ""}},
		{"group-readable warns", "A=1\n", 0o640, "", `warning: target "api": target.0.env_file "runner.env" is readable by its group`, map[string]string{"A": "1"}},
		{"clash with env", "A=secret1\n", 0o600, "A = \"2\"\n", `target "api": A is set both in env and in env_file "runner.env": keep it in one of them`, nil},
		{"not KEY=VALUE", "hunter2\n", 0o600, "", `target "api": env_file "runner.env" line 1 is not KEY=VALUE`, nil},
		{"bad name", "A=1\n1X=secret1\n", 0o600, "", `env_file "runner.env" line 2: the name before = is not a valid environment variable name`, nil},
		{"name twice", "A=1\nA=secret1\n", 0o600, "", `env_file "runner.env" line 2: A is already set on line 1`, nil},
		{"readable by all", "A=1\n", 0o644, "", `target.0.env_file "runner.env" is readable by every user (mode 0644): run chmod 600 on it`, nil},
		{"missing", "", 0, "", `target.0.env_file "runner.env" does not exist`, nil},
		{"too large", "A=" + strings.Repeat("x", maxEnvFileSize) + "\n", 0o600, "", `env_file "runner.env" is larger than 1048576 bytes`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadEnvFile(t, tc.content, tc.mode, tc.env, Options{})
			got := problemsOf(cfg, err)
			wantOne(t, got, tc.want)
			for _, p := range got {
				if strings.Contains(p, "secret1") || strings.Contains(p, "hunter2") {
					t.Errorf("a message quotes the env file: %s", p)
				}
			}
			if tc.wantEnv != nil && (cfg == nil || !maps.Equal(cfg.Targets[0].Env, tc.wantEnv)) {
				t.Errorf("env = %v, want %v", envOf(cfg), tc.wantEnv)
			}
		})
	}
}

func envOf(cfg *Config) map[string]string {
	if cfg == nil {
		return nil
	}
	return cfg.Targets[0].Env
}

// Offline (validate on another host) env_file is not read, as no credential file is; config print
// (Redacted) shows only the file's own env keys, so printing it back gives no clash; a change of
// the file's values is a change of target.env (next pass: idle runners are replaced).
func TestEnvFileOfflineRedactedAndDiff(t *testing.T) {
	cfg, err := loadEnvFile(t, "", 0, "", Options{Offline: true})
	if err != nil || len(cfg.Targets[0].Env) != 0 || cfg.Targets[0].EnvFile == "" {
		t.Fatalf("offline: %v, env %v, env_file %q; want valid, nothing read", err, envOf(cfg), cfg.Targets[0].EnvFile)
	}
	old, err := loadEnvFile(t, "A=1\n", 0o600, "C = \"3\"\n", Options{})
	must(t, err)
	red := old.Redacted()
	if !maps.Equal(red.Targets[0].Env, map[string]string{"C": RedactedValue}) {
		t.Errorf("Redacted env = %v, want only the inline C", red.Targets[0].Env)
	}
	cur, err := loadEnvFile(t, "A=2\n", 0o600, "C = \"3\"\n", Options{})
	must(t, err)
	ch := Diff(old, cur)
	if len(ch) != 1 || ch[0].Key != "env" || ch[0].Class != NextPass || strings.Contains(ch[0].String(), "2") {
		t.Errorf("Diff after the env file changed = %v, want one next-pass change of env, no value shown", ch)
	}
}

// A config file holding env values warns when local users other than root may read it: every
// job runs as a local user. Root's group is root's; the values of env_file are not the file's.
func TestReadableConfigWarning(t *testing.T) {
	const warn = `warning: target "api": the config file holds target env values and is readable by `
	for _, tc := range []struct {
		name string
		mode os.FileMode
		gid  int
		env  bool
		want string
	}{
		{"0600 with env", 0o600, 0, true, ""},
		{"0644 with env", 0o644, 0, true, warn + "every local user (mode 0644)"},
		{"0644 without env", 0o644, 0, false, ""},
		{"0640 group root", 0o640, 0, true, ""},
		{"0640 another group", 0o640, 1, true, warn + "its group (gid 1) (mode 0640)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := target("")
			if tc.env {
				body += "[target.env]\nTOKEN = \"s\"\n"
			}
			p := filepath.Join(t.TempDir(), "c.toml")
			must(t, errors.Join(os.WriteFile(p, []byte(body), tc.mode), os.Chmod(p, tc.mode)))
			if err := os.Chown(p, -1, tc.gid); err != nil {
				t.Fatalf("give the config file group %d (this test runs as root, as CI does): %v", tc.gid, err)
			}
			got := problemsOf(LoadWith(p, Options{Environ: func() []string { return nil }}))
			wantOne(t, got, tc.want)
			if tc.want != "" && !strings.HasPrefix(got[0], "6:2: ") { // [target.env]
				t.Errorf("the warning is not at the target's env table: %s", got[0])
			}
			// validate --offline may run on another host, where the file's mode means nothing.
			offline := problemsOf(LoadWith(p, Options{Offline: true, Environ: func() []string { return nil }}))
			wantOne(t, offline, "")
		})
	}
}
