package main

import (
	"strings"
	"testing"
)

func TestConfigPrint(t *testing.T) {
	t.Setenv("RUNNER_MANAGER_MAX_RUNNERS", "9")
	t.Chdir("../../examples")
	for _, format := range []string{"toml", "json"} {
		t.Run(format, func(t *testing.T) {
			stdout, stderr, code := execute(t, "config", "print", "--config", "config.yaml", "--format", format)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if strings.Contains(stdout, "/opt/hostedtoolcache") {
				t.Errorf("a target env value was printed:\n%s", stdout)
			}
			golden(t, "../cmd/runner-manager/testdata/config-print."+format+".golden", stdout)
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
