package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/livetest"
	"github.com/runner-manager/runner-manager/internal/status"
)

// waitLimit bounds every wait for the daemon, the shim or the fake runner (real processes and
// file events); reaching it is a failure, never the expected path.
const waitLimit = 15 * time.Second

// env is one simulated GitHub (repository acme/web, a token, the fake runner package and a
// webhook to the daemon) and the files a daemon on it needs, under a short temp dir (unix socket
// paths are limited to ~104 bytes).
type env struct {
	t           *testing.T
	srv         *ghsim.Server
	dir         string
	configPath  string
	stateDir    string
	tokenFile   string
	secretFile  string
	metricsAddr string
	webhookAddr string

	logs string  // the file the daemon writes every line to
	opts Options // what start passes beside the paths (a test's clock), zero for most tests
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, ghsim.Options{}) }

// newEnvWith is newEnv on a simulator with the given options (GHES, for one).
func newEnvWith(t *testing.T, opts ghsim.Options) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "rmd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv := ghsimtest.Start(t, opts)
	e := &env{t: t, srv: srv, dir: dir, configPath: filepath.Join(dir, "config.toml"), stateDir: filepath.Join(dir, "state"),
		tokenFile: filepath.Join(dir, "token"), secretFile: filepath.Join(dir, "webhook-secret"),
		metricsAddr: freeAddr(t), webhookAddr: freeAddr(t), logs: filepath.Join(dir, "daemon.log")}
	srv.CreateRepo("acme", "web")
	e.writeFile(e.tokenFile, srv.AddToken(ghsim.TokenOptions{Login: "ops"}))
	e.writeFile(e.secretFile, "webhook-test-secret")
	srv.AddWebhook("http://"+e.webhookAddr+"/webhook", "webhook-test-secret")
	pkgDir := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pkg, err := ghsim.BuildFakeRunnerPackage(t.Context(), pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	srv.ServeRunnerPackage(pkg)
	e.writeConfig(webTarget(1))
	return e
}

// create opens a file the daemon writes (its goroutines may write at once: an *os.File allows it).
func (e *env) create(path string) *os.File {
	e.t.Helper()
	f, err := os.Create(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *env) read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// freeAddr picks a loopback port for a listener the daemon opens itself.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (e *env) writeFile(path, content string) {
	e.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// configText is the daemon's config with the given [[target]] tables (see webTarget).
func (e *env) configText(targets string) string {
	return fmt.Sprintf(`[daemon]
state_dir = %q
log_format = "text"
log_level = "debug"
max_runners = 2
poll_interval = "1s"
shutdown_drain_timeout = "5s"
status_listen = "unix"
metrics_listen = %q
runner_user = "daemon" # these tests do not test isolation (e2e/isolation does)

[github]
api_url = %q
token_file = %q

[webhook]
listen = %q
path = "/webhook"
secret_file = %q
poll_interval = "1s"
`, e.stateDir, e.metricsAddr, e.srv.APIURL(), e.tokenFile, e.webhookAddr, e.secretFile) + targets
}

// webTarget is target web on acme/web bounded to maxRunners; 0 makes the file invalid, on line 26
// of configText, which a rejection must name.
func webTarget(maxRunners int) string {
	return fmt.Sprintf(`
[[target]]
name = "web"
repository = "acme/web"
labels = ["linux"]
max_runners = %d
`, maxRunners)
}

// writeConfig replaces the config file atomically (write aside, rename), as config tools do.
func (e *env) writeConfig(targets string) {
	e.t.Helper()
	e.writeRaw(e.configText(targets))
}

// writeRaw is writeConfig with the whole file's text.
func (e *env) writeRaw(body string) {
	e.t.Helper()
	tmp := e.configPath + ".tmp"
	e.writeFile(tmp, body)
	if err := os.Rename(tmp, e.configPath); err != nil {
		e.t.Fatal(err)
	}
}

// start runs the daemon in-process with the built binary as its shim; the test's cleanup stops it
// (a bounded shutdown drain) and checks it stopped cleanly. Logs are printed if the test failed.
func (e *env) start() { e.startStoppable() }

// startStoppable is start, and returns a function that stops the daemon (SIGTERM's path) and
// waits for it; the cleanup then only checks.
func (e *env) startStoppable() (stop func()) {
	e.t.Helper()
	stderr := e.create(e.logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		o := e.opts
		o.ConfigPath, o.Stderr, o.ShimExecutable = e.configPath, stderr, binary
		done <- Run(ctx, o)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("daemon.Run: %v", err)
			}
			_ = stderr.Close()
		})
	}
	e.t.Cleanup(func() {
		stop()
		if e.t.Failed() {
			e.t.Logf("daemon log:\n%s", e.read(e.logs))
		}
	})
	e.waitStatus("the status socket answers", func(status.Snapshot) bool { return true })
	return stop
}

// waitStatus polls the status socket until cond holds and returns that snapshot.
func (e *env) waitStatus(what string, cond func(status.Snapshot) bool) status.Snapshot {
	e.t.Helper()
	var last status.Snapshot
	var err error
	if timeout := livetest.Poll(waitLimit, 50*time.Millisecond, func() bool { // a real daemon
		last, err = status.Fetch(e.t.Context(), status.SocketPath(e.stateDir))
		return err == nil && cond(last)
	}); timeout != nil {
		e.t.Fatalf("%v waiting for %s; last status %+v (err %v)", timeout, what, last, err)
	}
	return last
}

// target returns the status of target web, or the zero Target.
func target(s status.Snapshot) status.Target {
	for _, t := range s.Targets {
		if t.Name == "web" {
			return t
		}
	}
	return status.Target{}
}

// hostID is this daemon's journal host id, read from a runner name it owns.
func hostID(t *testing.T, s status.Snapshot) string {
	t.Helper()
	for _, r := range s.Runners {
		var id string
		var seq int64
		if _, err := fmt.Sscanf(r.Name, "runner-manager-%8s-%d", &id, &seq); err == nil {
			return id
		}
	}
	t.Fatalf("no runner name with a host id in %+v", s.Runners)
	return ""
}
