//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
)

// configTOML is a valid config written by hand, so that the tests know every line number:
// line 8 is max_runners, line 12 the target's table header, line 16 its max_runners, line 17 its idle_timeout.
const configTOML = `[daemon]
state_dir = %q
runner_user = "daemon" # not an isolation test (log_level is info by default)
log_format = "json"
poll_interval = "1s"
shutdown_drain_timeout = "10s"
status_listen = "unix"
max_runners = 4
[github]
api_url = %q
token_file = %q
[[target]]
name = "web"
repository = "acme/web"
labels = ["e2e"]
max_runners = 2
idle_timeout = "3s"
`

// configYAML is configTOML's YAML twin (line 7 is max_runners).
const configYAML = `daemon:
  state_dir: %q
  log_level: info
  log_format: json
  poll_interval: 1s
  shutdown_drain_timeout: 10s
  max_runners: 4
github:
  api_url: %q
  token_file: %q
target:
  - name: web
    repository: acme/web
    labels: [e2e]
    max_runners: 2
`

// replaceLine returns text with its line n (1-based) replaced.
func replaceLine(t testing.TB, text string, n int, line string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	if n < 1 || n > len(lines) {
		t.Fatalf("no line %d", n)
	}
	lines[n-1] = line
	return strings.Join(lines, "\n")
}

// TestMalformedConfigAtStart (promise 4): a daemon started on a bad file exits 1 at once, prints
// every problem as file:line:col on stderr, and creates nothing: not even its state directory.
func TestMalformedConfigAtStart(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	bin := harness.Build(t)
	for _, tc := range []struct {
		name string
		file string // config.toml or config.yaml
		line int    // the line to break
		with string // what it becomes
	}{
		{name: "toml syntax", file: "config.toml", line: 8, with: "max_runners = = 4"},
		{name: "toml wrong type", file: "config.toml", line: 8, with: `max_runners = "four"`},
		{name: "toml bad duration", file: "config.toml", line: 17, with: `idle_timeout = "soon"`},
		{name: "toml out of range", file: "config.toml", line: 16, with: "max_runners = 0"},
		{name: "toml unknown key", file: "config.toml", line: 17, with: `idle_timout = "3s"`},
		{name: "toml unclosed table", file: "config.toml", line: 12, with: "[[target"},
		{name: "yaml syntax", file: "config.yaml", line: 7, with: "  max_runners: [4"},
		{name: "yaml wrong type", file: "config.yaml", line: 7, with: "  max_runners: four"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stateDir := filepath.Join(dir, "state")
			tmpl := configTOML
			if strings.HasSuffix(tc.file, ".yaml") {
				tmpl = configYAML
			}
			path := filepath.Join(dir, tc.file)
			text := replaceLine(t, fmt.Sprintf(tmpl, stateDir, sim.URL(), sim.TokenFile), tc.line, tc.with)
			harness.WriteConfig(t, path, []byte(text))

			code, stdout, stderr := runCLI(t, bin, "daemon", "--config", path)
			if code != 1 {
				t.Errorf("daemon exited %d on a malformed config, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			pos := regexp.MustCompile(regexp.QuoteMeta(path) + fmt.Sprintf(`:%d:\d+: \S`, tc.line))
			if !pos.MatchString(stderr) {
				t.Errorf("stderr does not point at %s:%d:<col>:\n%s", path, tc.line, stderr)
			}
			if strings.Contains(stdout, "daemon running") {
				t.Errorf("the daemon said it was running:\n%s", stdout)
			}
			if _, err := os.Stat(stateDir); !errors.Is(err, os.ErrNotExist) {
				entries, _ := os.ReadDir(stateDir)
				t.Errorf("a rejected config left state_dir %s behind (%v): %v", stateDir, err, entries)
			}
		})
	}
}

// runCLI runs the binary with args (without RUNNER_MANAGER_* in its environment) and returns its
// exit code and output.
func runCLI(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestMalformedConfigOnReload (promise 4): a running daemon is given a file that adds a target and
// lowers max_runners but has one bad value. The file is rejected whole: the problem is logged and
// shown in status with its position, the generation and targets stay as they were, jobs keep
// running, and the next valid file applies.
func TestMalformedConfigOnReload(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web", "acme/api"}})
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	path := filepath.Join(dir, "config.toml")
	good := fmt.Sprintf(configTOML, stateDir, sim.URL(), sim.TokenFile)
	harness.WriteConfig(t, path, []byte(good))
	d := harness.StartDaemon(t, path)
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	before := d.Status(t)

	// Lines 18-23 add target api, whose idle_timeout (line 23) is bad; line 16 lowers web's bound.
	api := "[[target]]\nname = \"api\"\nrepository = \"acme/api\"\nlabels = [\"e2e\"]\nmax_runners = 1\nidle_timeout = \"soon\"\n"
	bad := replaceLine(t, good, 16, "max_runners = 1") + api
	mark := d.Mark()
	harness.WriteConfigViaRename(t, path, []byte(bad))
	rejected := d.WaitLog(t, mark, `config rejected`, 30*time.Second)
	if want := path + ":23:"; !strings.Contains(rejected.Raw, want) {
		t.Errorf("the rejection does not point at %s<col>: %s", want, rejected.Raw)
	}
	var snap = d.Status(t)
	harness.Eventually(t, 10*time.Second, "status to show the rejected reload", func() bool {
		snap = d.Status(t)
		return !snap.Config.LastReload.OK
	})
	if len(snap.Config.LastReload.Error) == 0 || !strings.HasPrefix(snap.Config.LastReload.Error[0], path+":23:") {
		t.Errorf("status does not show the positioned problem: %q", snap.Config.LastReload.Error)
	}
	if snap.Config.Generation != before.Config.Generation {
		t.Errorf("generation went from %d to %d although the file was rejected", before.Config.Generation, snap.Config.Generation)
	}
	if len(snap.Targets) != 1 || snap.Targets[0].Name != "web" || snap.Targets[0].MaxRunners != 2 {
		t.Errorf("part of the rejected file was applied: targets %+v", snap.Targets)
	}
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	if d.Exited() {
		t.Fatalf("the daemon exited after a bad reload")
	}

	fixed := strings.Replace(bad, `idle_timeout = "soon"`, `idle_timeout = "3s"`, 1)
	mark = d.Mark()
	harness.WriteConfigViaRename(t, path, []byte(fixed))
	d.WaitLog(t, mark, `"msg":"config reloaded"`, 30*time.Second)
	snap = d.Status(t)
	if !snap.Config.LastReload.OK || snap.Config.Generation != before.Config.Generation+1 || len(snap.Targets) != 2 {
		t.Errorf("the fixed file was not applied: reload %+v, generation %d (was %d), targets %+v",
			snap.Config.LastReload, snap.Config.Generation, before.Config.Generation, snap.Targets)
	}
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/api", e2eLabels, 200*time.Millisecond))
	stopClean(t, sim, d, 15*time.Second)
}
