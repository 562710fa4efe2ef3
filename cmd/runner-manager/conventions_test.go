package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUnknownSubcommandIsUsage walks the whole tree: at every level, an unknown subcommand exits
// 2 (docs/exit-codes.md) and names the command it was given to; a bare group prints its help.
func TestUnknownSubcommandIsUsage(t *testing.T) {
	groups := []string{""}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.HasSubCommands() {
				groups = append(groups, strings.TrimPrefix(sub.CommandPath(), "runner-manager "))
				walk(sub)
			}
		}
	}
	walk(newRootCmd())
	if len(groups) < 4 { // root, auth, config, service (and completion)
		t.Fatalf("found groups %q, want at least root, auth, config and service", groups)
	}
	for _, g := range groups {
		args := append(strings.Fields(g), "bogus")
		_, stderr, code := execute(t, args...)
		if code != exitUsage || !strings.Contains(stderr, `unknown command "bogus"`) {
			t.Errorf("runner-manager %s: exit %d, stderr %q; want exit 2 and unknown command", strings.Join(args, " "), code, stderr)
		}
		if g == "" {
			continue
		}
		stdout, _, code := execute(t, strings.Fields(g)...)
		if code != exitOK || !strings.Contains(stdout, "Available Commands:") {
			t.Errorf("runner-manager %s: exit %d, want its help and 0\n%s", g, code, stdout)
		}
	}
	_, stderr, _ := execute(t, "service", "statu")
	if !strings.Contains(stderr, "did you mean status?") {
		t.Errorf("service statu: stderr %q, want a suggestion", stderr)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := execute(t, "version")
	for _, want := range []string{"runner-manager ", "commit:", "built:", "go version: " + runtime.Version(), "platform:   " + runtime.GOOS} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("version: exit %d, output %q lacks %q", code, stdout, want)
		}
	}
	stdout, _, _ = execute(t, "version", "--json")
	var info struct{ Version, GoVersion string }
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || info.Version == "" {
		t.Fatalf("version --json: %v\n%s", err, stdout)
	}
	// --version stays the one line selfupdate.ParseVersion reads from a candidate binary.
	stdout, _, _ = execute(t, "--version")
	if stdout != "runner-manager "+info.Version+"\n" {
		t.Errorf("--version printed %q, want %q", stdout, "runner-manager "+info.Version+"\n")
	}
}

// TestFlagCompletion asks the shell-completion entry point (what the generated scripts call) for
// flag values.
func TestFlagCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"validate", "--format", ""}, []string{"text", "json", "github"}},
		{[]string{"validate", "--input-format", ""}, []string{"toml", "yaml"}},
		{[]string{"config", "print", "--format", ""}, []string{"toml", "json"}},
		{[]string{"daemon", "--config", ""}, []string{"toml", "yaml", "yml", ":8"}},                                       // 8: filter by extension
		{[]string{"service", "install", "--root", ""}, []string{":16"}},                                                   // 16: directories
		{[]string{"auth", "status", "--config", ""}, []string{"toml", "yaml", ":8"}},                                      // a persistent flag
		{[]string{"verify", "--config", "../../examples/config.toml", "--target", ""}, []string{"api", "acme-org", ":4"}}, // 4: no files
	} {
		stdout, _, code := execute(t, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		for _, w := range tc.want {
			if code != exitOK || !strings.Contains(stdout, w+"\n") {
				t.Errorf("complete %q: exit %d, output %q lacks %q", tc.args, code, stdout, w)
			}
		}
	}
}

// TestManPages generates the pages as `make man` does: one per visible command, from its help.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := execute(t, "man", dir); code != exitOK {
		t.Fatalf("man: exit %d: %s", code, stderr)
	}
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("no man page %s: %v", name, err)
			continue
		}
		if !strings.Contains(string(b), ".TH \"RUNNER-MANAGER\" \"1\"") {
			t.Errorf("%s has no section-1 header", name)
		}
	}
	validate, _ := os.ReadFile(filepath.Join(dir, "runner-manager-validate.1"))
	if !strings.Contains(string(validate), "offline") {
		t.Error("runner-manager-validate.1 does not describe --offline")
	}
}
