package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Every rule lives here and has a row in validate_test.go. Messages name the key as the operator
// wrote it and say what to do; they never echo a value that could be a secret.

// The patterns are shared with the JSON Schema (schema.go's JSONSchemaExtend methods).
const (
	ownerPattern  = `[A-Za-z0-9]+(-[A-Za-z0-9]+)*`
	repoPattern   = `[A-Za-z0-9._-]+`
	semverPattern = `[0-9]+\.[0-9]+\.[0-9]+`
)

var (
	ownerName  = regexp.MustCompile("^" + ownerPattern + "$")
	repoName   = regexp.MustCompile("^" + repoPattern + "$")
	targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	semver     = regexp.MustCompile("^" + semverPattern + "$")
	// labelChars: no comma, space, tab or control character (GitHub splits labels on commas).
	labelChars = regexp.MustCompile(`^[^, \t\x00-\x1f\x7f]*$`)
)

// Limits GitHub enforces on names, and ours on target names (they become directory names).
const (
	maxOwnerLen  = 39
	maxRepoLen   = 100
	maxTargetLen = 64
	maxLabelLen  = 100
	minPoll      = time.Second
	// minReloadSettle keeps two reads of a file being written apart.
	minReloadSettle = 100 * time.Millisecond
)

func (c *checker) validate(cfg *Config) {
	c.validateDaemon(cfg.Daemon)
	c.validateWindows(cfg)
	c.validateAccounts(cfg)
	if cfg.Webhook != nil {
		c.validateWebhook(*cfg.Webhook)
	}
	if cfg.Fleet != nil {
		c.validateFleet(*cfg.Fleet)
	}
	first := map[string]int{}
	sum := 0
	c.readableSecrets(cfg) // before envFile adds the file's values
	for i, t := range cfg.Targets {
		p := "target." + strconv.Itoa(i)
		c.validateTarget(t, p)
		c.validateExecutor(cfg.Daemon, t, p)
		if t.Enterprise != "" && t.ScaleSet == "" && cfg.Webhook == nil {
			c.add(SeverityError, p+".enterprise", enterpriseNeedsDemand)
		}
		c.envFile(cfg, i)
		switch {
		case !t.SharedWorkDir || t.WorkDir == "":
		case cfg.Daemon.RunnerUser == RunnerUserDaemon:
			c.add(SeverityWarning, p+".shared_work_dir", "shared_work_dir = true: every job of this target runs in work_dir and sees what earlier jobs left there (never cleaned); remove it to give each runner its own directory")
		default:
			// One directory for jobs that run as different users either breaks (a job cannot change
			// what another slot's job left) or, made writable to all, carries files across the very
			// users that keep jobs apart: refused rather than half-working.
			c.add(SeverityError, p+".shared_work_dir", "shared_work_dir = true needs daemon.runner_user = \"daemon\": with per-slot runner users (the default for a root daemon) the target's jobs would share one directory as different users, each unable to change what another slot's job left there, and files would pass from job to job across the users that keep them apart. Remove shared_work_dir (each runner gets <work_dir>/<attempt id>, removed after it), or set daemon.runner_user = \"daemon\" to run every runner as the daemon's user")
		}
		if poll := cfg.PollIntervalOf(t); t.IdlePollInterval != 0 && t.IdlePollInterval.D() < poll {
			c.add(SeverityError, p+".idle_poll_interval", fmt.Sprintf("idle_poll_interval (%s) must be at least this target's poll interval (%s): an idle repository is read less often than a busy one, never more; raise it, or remove it for 4 x the poll interval", t.IdlePollInterval, poll))
		}
		if t.Name != "" {
			if j, dup := first[t.Name]; dup {
				c.add(SeverityError, p+".name", fmt.Sprintf("name is already used by target #%d (line %d); target names must be unique", j+1, c.pos.find("target."+strconv.Itoa(j)).Line))
			} else {
				first[t.Name] = i
			}
		}
		if t.IsEnabled() {
			sum += t.MaxRunners
		}
	}
	if sum > cfg.Daemon.MaxRunners && cfg.Daemon.MaxRunners > 0 {
		c.add(SeverityWarning, "daemon.max_runners", fmt.Sprintf("enabled targets allow %d runners together but daemon.max_runners is %d: they will share %d (raise daemon.max_runners or lower a target's max_runners if that is not intended)", sum, cfg.Daemon.MaxRunners, cfg.Daemon.MaxRunners))
	}
}

// enterpriseNeedsDemand: GitHub's REST API lists queued jobs per repository only, and an
// enterprise's repositories are not the daemon's to enumerate, so polling cannot serve one.
const enterpriseNeedsDemand = `an enterprise target cannot poll: GitHub's REST API has no enterprise-wide list of queued jobs. Set scale_set = "<name>" (GitHub's message queue; jobs use runs-on: <name>), or add a [webhook] section and send the enterprise's workflow_job webhooks to it (enterprise settings, Hooks)`

func (c *checker) validateDaemon(d Daemon) {
	if !filepath.IsAbs(d.StateDir) {
		c.add(SeverityError, "daemon.state_dir", fmt.Sprintf("daemon.state_dir must be an absolute path (got %q)", d.StateDir))
	}
	c.oneOf("daemon.log_level", d.LogLevel, "debug", "info", "warn", "error")
	c.oneOf("daemon.log_format", d.LogFormat, "auto", "text", "json")
	if d.MaxRunners < 1 {
		c.add(SeverityError, "daemon.max_runners", fmt.Sprintf("daemon.max_runners must be at least 1 (got %d)", d.MaxRunners))
	}
	c.checkCountBound("daemon.max_runners", d.MaxRunners)
	if d.PollInterval.D() < minPoll {
		c.add(SeverityError, "daemon.poll_interval", fmt.Sprintf("daemon.poll_interval must be at least %s (got %s)", minPoll, d.PollInterval))
	}
	c.checkDurationBound("daemon.poll_interval", d.PollInterval)
	if d.IdlePollInterval != 0 && d.IdlePollInterval < d.PollInterval {
		c.add(SeverityError, "daemon.idle_poll_interval", fmt.Sprintf("daemon.idle_poll_interval (%s) must be at least daemon.poll_interval (%s): an idle repository is read less often than a busy one, never more; raise it, or remove it for 4 x poll_interval", d.IdlePollInterval, d.PollInterval))
	}
	c.checkDurationBound("daemon.idle_poll_interval", d.IdlePollInterval)
	c.checkJobBound("daemon.max_job_duration", d.MaxJobDuration)
	if d.ShutdownDrainTimeout < 0 {
		c.add(SeverityError, "daemon.shutdown_drain_timeout", fmt.Sprintf("daemon.shutdown_drain_timeout must not be negative (got %s)", d.ShutdownDrainTimeout))
	}
	c.checkDurationBound("daemon.shutdown_drain_timeout", d.ShutdownDrainTimeout)
	if d.ReloadSettle.D() < minReloadSettle {
		// 0 would read the file twice at once, between a truncation and the first write.
		c.add(SeverityError, "daemon.reload_settle", fmt.Sprintf("daemon.reload_settle must be at least %s (got %s)", minReloadSettle, d.ReloadSettle))
	}
	c.checkDurationBound("daemon.reload_settle", d.ReloadSettle)
	if d.MetricsListen != "" {
		c.listenAddr("daemon.metrics_listen", d.MetricsListen)
	}
	if d.StatusListen != "" && d.StatusListen != "unix" {
		host, _, _ := net.SplitHostPort(d.StatusListen)
		switch {
		case !c.listenAddr("daemon.status_listen", d.StatusListen) || d.StatusTokenFile != "":
		case !isLoopback(host):
			c.add(SeverityError, "daemon.status_listen", fmt.Sprintf("daemon.status_listen %q is reachable from other hosts and would answer anyone: set daemon.status_token_file (a chmod 600 file holding a bearer token) or listen on 127.0.0.1", d.StatusListen))
		default:
			// Every job runs as a local user, and loopback is open to every local user.
			c.add(SeverityWarning, "daemon.status_listen", fmt.Sprintf("daemon.status_listen %q has no daemon.status_token_file: every job runs as a local user and can reach loopback, so any job can read the daemon's status (targets, runners, events) and make it reload its config; set status_token_file (a chmod 600 file holding a bearer token), or use status_listen = \"unix\"", d.StatusListen))
		}
	}
	if d.StatusTokenFile != "" {
		c.secretFile("daemon.status_token_file", d.StatusTokenFile)
	}
	c.validateRunnerUser(d)
	c.oneOf("daemon.executor", d.Executor, ExecutorHost, ExecutorContainer)
	if d.Executor == ExecutorContainer {
		c.containerOS("daemon.executor", "daemon.executor")
	}
	c.validateDockerHost(d.DockerHost)
	c.validateLimits("daemon", d.MemoryMax, d.MinFreeDisk, d.CPUs, d.PidsMax)
}

// runnerUserName is what useradd accepts portably (shadow-utils' default NAME_REGEX).
var runnerUserName = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)

// validateRunnerUser checks who runners run as; running them as the daemon's user is allowed
// only with a warning, since a job can then read everything the daemon can.
func (c *checker) validateRunnerUser(d Daemon) {
	switch d.RunnerUser {
	case RunnerUserPerSlot:
	case RunnerUserDaemon:
		who := "the daemon's user"
		if os.Geteuid() == 0 {
			who = "root (the daemon's user)"
		}
		fix := "remove the setting (as root) to run each runner slot as its own user"
		if c.goos == "windows" {
			who, fix = "the service's account", "install the service under a dedicated local account that can read nothing else (docs/security.md)"
		}
		c.add(SeverityWarning, "daemon.runner_user", fmt.Sprintf("daemon.runner_user = \"daemon\": runners run as %s, so a job can read the GitHub credential, the state dir and other runners' secrets; %s", who, fix))
	case "": // per-slot as root; the daemon says at start when it cannot switch
	default:
		c.add(SeverityError, "daemon.runner_user", fmt.Sprintf("daemon.runner_user must be \"per-slot\" or \"daemon\" (got %q)", d.RunnerUser))
	}
	p := d.RunnerUserPrefix
	// The longest name is the prefix and the last slot's number. An out-of-range max_runners is
	// its own rule's problem: MaxRunners-1 of math.MinInt64 wraps to the largest int, whose 19
	// digits made this rule blame a prefix the file does not set (TestNoSpuriousPrefixProblem).
	inRange := d.MaxRunners >= 1 && d.MaxRunners <= MaxRunnersLimit
	longest := len(p) + len(strconv.Itoa(min(max(d.MaxRunners, 1), MaxRunnersLimit)-1))
	switch {
	case !runnerUserName.MatchString(p):
		c.add(SeverityError, "daemon.runner_user_prefix", fmt.Sprintf("daemon.runner_user_prefix %q is not a user name: use lower-case letters, digits, '_' and '-', starting with a letter or '_'", p))
	case longest > 32 && inRange:
		c.add(SeverityError, "daemon.runner_user_prefix", fmt.Sprintf("daemon.runner_user_prefix %q makes user names of %d characters with max_runners %d; user names have at most 32: shorten it", p, longest, d.MaxRunners))
	}
}

func (c *checker) validateWebhook(w Webhook) {
	if w.Listen == "" {
		c.add(SeverityError, "webhook.listen", `webhook.listen is required: the host:port to receive deliveries on, such as "127.0.0.1:8080"`)
	} else {
		c.listenAddr("webhook.listen", w.Listen)
	}
	if !strings.HasPrefix(w.Path, "/") {
		c.add(SeverityError, "webhook.path", fmt.Sprintf("webhook.path must start with / (got %q)", w.Path))
	}
	if w.SecretFile == "" {
		c.add(SeverityError, "webhook.secret_file", "webhook.secret_file is required: deliveries are only accepted with a valid X-Hub-Signature-256")
	} else {
		c.secretFile("webhook.secret_file", w.SecretFile)
	}
	if w.PollInterval < 0 {
		c.add(SeverityError, "webhook.poll_interval", fmt.Sprintf("webhook.poll_interval must not be negative (got %s)", w.PollInterval))
	}
	c.checkDurationBound("webhook.poll_interval", w.PollInterval)
}

// minLeaseTTL is etcd's own floor for a lease (1.5 election timeouts at its defaults, rounded up).
const minLeaseTTL = 2 * time.Second

func (c *checker) validateFleet(f Fleet) {
	if len(f.EtcdEndpoints) == 0 {
		c.add(SeverityError, "fleet.etcd_endpoints", `fleet.etcd_endpoints is required: the etcd client URLs, such as ["https://etcd-1:2379"]`)
	}
	tls := false
	for i, e := range f.EtcdEndpoints {
		u, err := url.Parse(e)
		p := "fleet.etcd_endpoints." + strconv.Itoa(i)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			c.add(SeverityError, p, fmt.Sprintf("fleet.etcd_endpoints: %q must be an http(s) URL such as https://etcd-1:2379", e))
		case u.Scheme == "https":
			tls = true
		case !isLoopback(u.Hostname()):
			c.add(SeverityWarning, p, fmt.Sprintf("fleet.etcd_endpoints: %q is plain http to a remote host: anyone on the network can read and change the fleet's state; use https with etcd_ca_file", e))
		}
	}
	if (f.EtcdCertFile == "") != (f.EtcdKeyFile == "") {
		c.add(SeverityError, "fleet.etcd_cert_file", "fleet.etcd_cert_file and fleet.etcd_key_file go together: set both for a client certificate, or neither")
	}
	if (f.EtcdCAFile != "" || f.EtcdCertFile != "") && !tls && len(f.EtcdEndpoints) > 0 {
		c.add(SeverityWarning, "fleet.etcd_endpoints", "fleet: TLS files are set but no endpoint is https, so they are not used")
	}
	for key, file := range map[string]string{"fleet.etcd_ca_file": f.EtcdCAFile, "fleet.etcd_cert_file": f.EtcdCertFile} {
		if file != "" {
			c.regularFile(key, file)
		}
	}
	if f.EtcdKeyFile != "" {
		c.secretFile("fleet.etcd_key_file", f.EtcdKeyFile)
	}
	for key, v := range map[string]string{"fleet.name": f.Name, "fleet.host_name": f.HostName} {
		switch {
		case v == "" && key == "fleet.host_name":
			c.add(SeverityError, key, "fleet.host_name is required when the machine's host name cannot be read")
		case v == "":
			c.add(SeverityError, key, "fleet.name is required: hosts with the same fleet name share targets")
		case len(v) > maxTargetLen || !targetName.MatchString(v):
			c.add(SeverityError, key, fmt.Sprintf("%s must be 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit (got %q)", key, maxTargetLen, v))
		}
	}
	if d := f.LeaseTTL.D(); d < minLeaseTTL || d%time.Second != 0 {
		c.add(SeverityError, "fleet.lease_ttl", fmt.Sprintf("fleet.lease_ttl must be whole seconds, at least %s: etcd leases count in seconds (got %s)", minLeaseTTL, f.LeaseTTL))
	}
	c.checkDurationBound("fleet.lease_ttl", f.LeaseTTL)
}

func (c *checker) validateTarget(t Target, p string) {
	switch {
	case t.Name == "":
		c.add(SeverityError, p, "name is required: it identifies the target across reloads")
	case len(t.Name) > maxTargetLen || !targetName.MatchString(t.Name):
		c.add(SeverityError, p+".name", fmt.Sprintf("name must be 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit (got %q)", maxTargetLen, t.Name))
	}
	switch {
	case t.Repository != "" && t.Organization != "":
		c.add(SeverityError, p+".organization", "set either repository or organization, not both")
	case t.Enterprise != "" && (t.Repository != "" || t.Organization != ""):
		c.add(SeverityError, p+".enterprise", "set one of repository, organization and enterprise, not several: a runner is registered in one place")
	case t.Enterprise != "":
		if msg := checkOwner(t.Enterprise); msg != "" {
			c.add(SeverityError, p+".enterprise", fmt.Sprintf("enterprise %q %s (the slug in https://github.com/enterprises/<slug>)", t.Enterprise, strings.Replace(msg, "GitHub login", "GitHub enterprise slug", 1)))
		}
	case t.Repository != "":
		c.checkRepository(p+".repository", t.Repository)
		if t.RunnerGroup != "" {
			c.add(SeverityError, p+".runner_group", "runner_group applies to organization targets only (repository runners always join the Default group)")
		}
	case t.Organization != "":
		if msg := checkOwner(t.Organization); msg != "" {
			c.add(SeverityError, p+".organization", fmt.Sprintf("organization %q %s", t.Organization, msg))
		}
	default:
		c.add(SeverityError, p, `one of repository = "owner/repo", organization = "org" or enterprise = "slug" is required`)
	}
	if len(t.RunnerGroup) > maxRepoLen || strings.ContainsFunc(t.RunnerGroup, isControl) {
		c.add(SeverityError, p+".runner_group", fmt.Sprintf("runner_group must be at most %d printable characters", maxRepoLen))
	}
	c.checkLabels(p, t.Labels)
	c.checkScaleSet(t, p)
	if t.MaxRunners < 1 {
		c.add(SeverityError, p+".max_runners", fmt.Sprintf("max_runners must be at least 1 (got %d)", t.MaxRunners))
	}
	c.checkCountBound(p+".max_runners", t.MaxRunners)
	switch {
	case t.MinIdle < 0:
		c.add(SeverityError, p+".min_idle", fmt.Sprintf("min_idle must not be negative (got %d)", t.MinIdle))
	case t.MinIdle > t.MaxRunners && t.MaxRunners >= 1:
		c.add(SeverityError, p+".min_idle", fmt.Sprintf("min_idle (%d) must not exceed max_runners (%d)", t.MinIdle, t.MaxRunners))
	}
	c.checkSchedule(t, p)
	if t.IdleTimeout < 0 {
		c.add(SeverityError, p+".idle_timeout", fmt.Sprintf("idle_timeout must not be negative (got %s)", t.IdleTimeout))
	}
	c.checkDurationBound(p+".idle_timeout", t.IdleTimeout)
	if t.StartupTimeout.D() < MinStartupTimeout {
		c.add(SeverityError, p+".startup_timeout", fmt.Sprintf("startup_timeout must be at least %s: a runner needs that long to connect to GitHub (got %s)", MinStartupTimeout, t.StartupTimeout))
	}
	c.checkDurationBound(p+".startup_timeout", t.StartupTimeout)
	c.checkJobBound(p+".max_job_duration", t.MaxJobDuration)
	if t.PollInterval != 0 && t.PollInterval.D() < minPoll {
		c.add(SeverityError, p+".poll_interval", fmt.Sprintf("poll_interval must be at least %s, or absent to use daemon.poll_interval (got %s)", minPoll, t.PollInterval))
	}
	c.checkDurationBound(p+".poll_interval", t.PollInterval)
	c.checkDurationBound(p+".idle_poll_interval", t.IdlePollInterval)
	c.validateLimits(p, t.MemoryMax, t.MinFreeDisk, t.CPUs, t.PidsMax)
	c.oneOf(p+".mode", t.Mode, "autoscale", "monitor")
	if t.RunnerVersion != "latest" && !semver.MatchString(t.RunnerVersion) {
		c.add(SeverityError, p+".runner_version", fmt.Sprintf(`runner_version must be "latest" or an actions/runner version such as "2.321.0" (got %q)`, t.RunnerVersion))
	}
	if t.WorkDir != "" && !filepath.IsAbs(t.WorkDir) {
		c.add(SeverityError, p+".work_dir", fmt.Sprintf("work_dir must be an absolute path (got %q)", t.WorkDir))
	}
	if t.SharedWorkDir && t.WorkDir == "" {
		c.add(SeverityError, p+".shared_work_dir", "shared_work_dir needs work_dir: the directory every runner of this target shares")
	}
	if t.Ephemeral != nil && !*t.Ephemeral {
		c.add(SeverityError, p+".ephemeral", "ephemeral = false is not supported: just-in-time runners are always ephemeral (each runs one job and is replaced); remove the key")
	}
}

func (c *checker) checkRepository(path, repo string) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || strings.Contains(name, "/") {
		c.add(SeverityError, path, fmt.Sprintf(`repository must be "owner/repo" (got %q)`, repo))
		return
	}
	if msg := checkOwner(owner); msg != "" {
		c.add(SeverityError, path, fmt.Sprintf("repository %q: owner %q %s", repo, owner, msg))
	}
	switch {
	case name == "." || name == "..":
		c.add(SeverityError, path, fmt.Sprintf("repository %q: %q is not a repository name", repo, name))
	case len(name) == 0 || len(name) > maxRepoLen || !repoName.MatchString(name):
		c.add(SeverityError, path, fmt.Sprintf("repository %q: name must be 1-%d letters, digits, '.', '_' or '-'", repo, maxRepoLen))
	}
}

// checkOwner returns why a user or organisation login is invalid for GitHub, or "".
func checkOwner(s string) string {
	if len(s) == 0 || len(s) > maxOwnerLen || !ownerName.MatchString(s) {
		return fmt.Sprintf("is not a GitHub login: 1-%d letters, digits and single hyphens, not starting or ending with a hyphen", maxOwnerLen)
	}
	return ""
}

func (c *checker) checkLabels(p string, labels []string) {
	seen := map[string]bool{}
	for i, l := range labels {
		lp := p + ".labels." + strconv.Itoa(i)
		switch {
		case l == "" || len(l) > maxLabelLen:
			c.add(SeverityError, lp, fmt.Sprintf("label %q must be 1-%d characters", l, maxLabelLen))
		case !labelChars.MatchString(l):
			c.add(SeverityError, lp, fmt.Sprintf("label %q must not contain commas, spaces or control characters", l))
		case seen[strings.ToLower(l)]:
			c.add(SeverityWarning, lp, fmt.Sprintf("label %q is listed twice (labels are case-insensitive)", l))
		}
		seen[strings.ToLower(l)] = true
	}
}

// checkScaleSet: a scale set's name is a label its jobs ask for; its labels are ScaleSetLabels.
func (c *checker) checkScaleSet(t Target, p string) {
	if t.ScaleSet == "" {
		if t.DeleteScaleSetOnRemove {
			c.add(SeverityError, p+".delete_scale_set_on_remove", "delete_scale_set_on_remove applies to scale-set targets only: set scale_set, or remove the key")
		}
		return
	}
	switch {
	case len(t.ScaleSet) > maxLabelLen:
		c.add(SeverityError, p+".scale_set", fmt.Sprintf("scale_set must be 1-%d characters", maxLabelLen))
	case !labelChars.MatchString(t.ScaleSet):
		c.add(SeverityError, p+".scale_set", fmt.Sprintf("scale_set %q must not contain commas, spaces or control characters: jobs name it in runs-on", t.ScaleSet))
	}
	c.scaleSetLabels(t, p)
}

func (c *checker) oneOf(path, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		c.add(SeverityError, path, fmt.Sprintf("%s must be one of %s (got %q)", display(path), strings.Join(allowed, ", "), v))
	}
}

// listenAddr reports whether addr is a valid host:port, adding the problem when not.
func (c *checker) listenAddr(path, addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		if n, err = strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port out of range")
		}
	}
	if err != nil {
		c.add(SeverityError, path, fmt.Sprintf(`%s must be host:port such as "127.0.0.1:9090" (got %q)`, path, addr))
		return false
	}
	return true
}

// secretFile applies the rule of CheckSecretFile, which the daemon applies too, to the file at key path.
func (c *checker) secretFile(path, written string) {
	if c.offline {
		return
	}
	msg, sev := secretProblem(resolvePath(c.file, written))
	if msg == "" {
		return
	}
	if msg == "does not exist" {
		msg += " (paths are relative to the config file's directory)"
	}
	c.add(sev, path, fmt.Sprintf("%s %q %s", path, written, msg))
}

// regularFile reports (and returns false) unless written names an existing regular file; offline
// it checks nothing of the host's files.
func (c *checker) regularFile(path, written string) (os.FileInfo, bool) {
	if c.offline {
		return nil, false
	}
	fi, err := os.Stat(resolvePath(c.file, written))
	switch {
	case os.IsNotExist(err):
		c.add(SeverityError, path, fmt.Sprintf("%s %q does not exist (paths are relative to the config file's directory)", path, written))
	case err != nil:
		c.add(SeverityError, path, fmt.Sprintf("%s %q cannot be read: %v", path, written, unwrapPathError(err)))
	case fi.IsDir():
		c.add(SeverityError, path, fmt.Sprintf("%s %q is a directory, not a file", path, written))
	default:
		return fi, true
	}
	return nil, false
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
