package harness

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/runner-manager/runner-manager/config"
)

// RunnerPrefix starts the name of every runner runner-manager registers.
const RunnerPrefix = "runner-manager-"

// Config builds a daemon config file. File is the schema struct itself, rendered with go-toml, so
// every field the daemon understands can be set; NewConfig fills the fields a fast e2e test wants.
type Config struct {
	File     config.Config
	Dir      string // directory holding the config file
	Path     string // Dir/config.toml
	StateDir string // File.Daemon.StateDir, outside Dir so no daemon command line names it
}

// NewConfig returns a config for sim with a fresh state directory: poll_interval 1s,
// shutdown_drain_timeout 10s, host max_runners 4, JSON logs at info, the status socket on, no targets.
func NewConfig(t testing.TB, sim *Sim) *Config {
	t.Helper()
	root := t.TempDir()
	c := &Config{Dir: filepath.Join(root, "etc"), StateDir: filepath.Join(root, "state")}
	c.Path = filepath.Join(c.Dir, "config.toml")
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		t.Fatalf("harness: %v", err)
	}
	c.File.Daemon = config.Daemon{
		StateDir: c.StateDir, LogLevel: "info", LogFormat: "json", MaxRunners: 4,
		PollInterval: config.Duration(time.Second), ShutdownDrainTimeout: config.Duration(10 * time.Second),
		ReloadSettle: config.Duration(time.Second), // the default: the file is rendered whole, so say it
		MinFreeDisk:  config.DefaultMinFreeDisk,    // the default, as ReloadSettle
		StatusListen: "unix",
		// Opted out of per-slot runner users: only the isolation suite (e2e/isolation) tests them.
		RunnerUser: config.RunnerUserDaemon, RunnerUserPrefix: config.DefaultRunnerUserPrefix,
	}
	c.File.GitHub = config.GitHub{APIURL: sim.URL(), TokenFile: sim.TokenFile}
	return c
}

// RepoTarget is a repository target with fast defaults (idle_timeout 3s, runner_version latest) and
// the default startup_timeout: the file is rendered from the struct, so a zero would be written.
func RepoTarget(name, repo string, labels []string, maxRunners int) config.Target {
	return config.Target{Name: name, Repository: repo, Labels: slices.Clone(labels), MaxRunners: maxRunners,
		IdleTimeout: config.Duration(3 * time.Second), StartupTimeout: config.Duration(defaultStartupTimeout),
		Mode: "autoscale", RunnerVersion: "latest"}
}

// OrgTarget is an organisation target with the same defaults as RepoTarget.
func OrgTarget(name, org string, labels []string, maxRunners int) config.Target {
	t := RepoTarget(name, "", labels, maxRunners)
	t.Organization = org
	return t
}

// defaultStartupTimeout is config.DefaultStartupTimeout as a duration.
var defaultStartupTimeout = func() time.Duration {
	d, err := time.ParseDuration(config.DefaultStartupTimeout)
	if err != nil {
		panic(err)
	}
	return d
}()

// Add appends targets.
func (c *Config) Add(targets ...config.Target) *Config {
	c.File.Targets = append(c.File.Targets, targets...)
	return c
}

// Remove drops the target called name (a no-op if there is none).
func (c *Config) Remove(name string) *Config {
	c.File.Targets = slices.DeleteFunc(c.File.Targets, func(t config.Target) bool { return t.Name == name })
	return c
}

// Target returns the target called name for editing in place; it fails the test if there is none.
func (c *Config) Target(t testing.TB, name string) *config.Target {
	t.Helper()
	for i := range c.File.Targets {
		if c.File.Targets[i].Name == name {
			return &c.File.Targets[i]
		}
	}
	t.Fatalf("harness: the config has no target %q", name)
	return nil
}

// Render is the TOML text of the config.
func (c *Config) Render(t testing.TB) []byte {
	t.Helper()
	data, err := toml.Marshal(c.File)
	if err != nil {
		t.Fatalf("harness: render the config: %v", err)
	}
	return data
}

// Write writes the config in place at c.Path (as `cat > config.toml` does) and returns the path.
func (c *Config) Write(t testing.TB) string {
	t.Helper()
	WriteConfig(t, c.Path, c.Render(t))
	return c.Path
}

// WriteConfig truncates and rewrites path in place, as a shell redirection does.
func WriteConfig(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("harness: write %s: %v", path, err)
	}
}

// WriteConfigViaRename writes a sibling temporary file and renames it over path, as editors and
// `mv` replacements do: the watched inode is replaced, never modified.
func WriteConfigViaRename(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatalf("harness: write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("harness: rename %s over %s: %v", tmp, path, err)
	}
}

// SwapConfigMapStyle publishes data the way the kubelet updates a mounted ConfigMap: the content goes
// into a fresh timestamped directory dir/..<stamp>/config.toml, the symlink dir/..data is atomically
// replaced to point at it, and dir/config.toml is (once) the symlink ..data/config.toml. The old
// timestamped directory is removed afterwards, as the kubelet does. It returns dir/config.toml.
func SwapConfigMapStyle(t testing.TB, dir string, data []byte) string {
	t.Helper()
	stamp := "..ts-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := os.MkdirAll(filepath.Join(dir, stamp), 0o755); err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, stamp, "config.toml"), data, 0o644); err != nil {
		t.Fatalf("harness: %v", err)
	}
	dataLink := filepath.Join(dir, "..data")
	old, _ := os.Readlink(dataLink)
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(stamp, tmpLink); err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		t.Fatalf("harness: swap %s: %v", dataLink, err)
	}
	path := filepath.Join(dir, "config.toml")
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", "config.toml"), path); err != nil {
			t.Fatalf("harness: %v", err)
		}
	}
	if old != "" && old != stamp {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatalf("harness: remove the previous ConfigMap version %s: %v", old, err)
		}
	}
	return path
}

// SwapConfigMap renders the config and publishes it ConfigMap-style in c.Dir (see
// SwapConfigMapStyle). c.Dir must not hold a regular config.toml: start from a fresh NewConfig.
func (c *Config) SwapConfigMap(t testing.TB) string {
	t.Helper()
	if fi, err := os.Lstat(c.Path); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("harness: %s is a regular file; a ConfigMap-style config needs a fresh Config", c.Path)
	}
	return SwapConfigMapStyle(t, c.Dir, c.Render(t))
}

// itoa keeps messages short where fmt would only format one int.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// Duration converts for config fields.
func Duration(d time.Duration) config.Duration { return config.Duration(d) }

// WebhookSecret is the secret the simulator signs deliveries with in e2e tests.
const WebhookSecret = "e2e-webhook-secret"

// WebhookPath is the path of the [webhook] listener WithWebhook adds.
const WebhookPath = "/webhook"

// WithWebhook adds a [webhook] section to c (a listener on a free loopback port, a 0600 secret
// file, slowPoll as the poll that reconciles missed deliveries) and returns the delivery URL to
// subscribe at the simulator (sim.AddWebhook(url, WebhookSecret)).
func (c *Config) WithWebhook(t testing.TB, slowPoll time.Duration) string {
	t.Helper()
	secretFile := filepath.Join(c.Dir, "webhook.secret")
	if err := os.WriteFile(secretFile, []byte(WebhookSecret+"\n"), 0o600); err != nil {
		t.Fatalf("harness: write the webhook secret: %v", err)
	}
	addr := FreeAddr(t)
	c.File.Webhook = &config.Webhook{Listen: addr, Path: WebhookPath, SecretFile: secretFile, PollInterval: config.Duration(slowPoll)}
	return "http://" + addr + WebhookPath
}

// FreeAddr returns a loopback address no one listens on right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: pick a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
