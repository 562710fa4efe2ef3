package service

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// StopMargin is what the stop timeout (TimeoutStopSec, launchd's ExitTimeOut, and the daemon's
// EXTEND_TIMEOUT_USEC when it starts to drain) gives beyond daemon.shutdown_drain_timeout: time to
// close the journal and release the lock after the drain, before the service manager kills.
const StopMargin = 30 * time.Second

// DefaultDrainTimeout is daemon.shutdown_drain_timeout's default (config.DefaultShutdownDrainTimeout),
// used when the config does not exist yet at install.
const DefaultDrainTimeout = 60 * time.Second

// Spec is what a generated unit or plist runs.
type Spec struct {
	Binary string // the private copy, ExecStart's program
	Config string // --config
	Source string // the source binary selfupdate watches (SourceFlag)
	Log    string // launchd only: stdout/stderr file
	// StateDir, when set (a LaunchAgent's, not the config's default), is given to the daemon as
	// RUNNER_MANAGER_STATE_DIR, so it and `service status` agree on where the state is.
	StateDir string
	// Drain is the config's daemon.shutdown_drain_timeout at install (0: DefaultDrainTimeout);
	// the stop timeout is Drain + StopMargin.
	Drain time.Duration
}

// WatchdogTimeout is the unit's WatchdogSec: systemd restarts a daemon that sent no WATCHDOG=1
// for this long (SIGABRT, then a restart under Restart=always).
const WatchdogTimeout = 2 * time.Minute

// WatchdogSeconds is WatchdogTimeout in whole seconds, for the unit.
func (Spec) WatchdogSeconds() int { return int(WatchdogTimeout / time.Second) }

// StopTimeoutSeconds is the unit's TimeoutStopSec (and the plist's ExitTimeOut), whole seconds.
func (s Spec) StopTimeoutSeconds() int {
	d := s.Drain
	if d <= 0 {
		d = DefaultDrainTimeout
	}
	return int((d + StopMargin + time.Second - 1) / time.Second)
}

// render checks s and executes t, the unit's or the plist's template, on data (s and what the
// template adds to it).
func (s Spec) render(t *template.Template, data any) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	var b bytes.Buffer
	err := t.Execute(&b, data)
	return b.String(), err
}

func (s Spec) check() error {
	for name, v := range map[string]string{"binary": s.Binary, "config": s.Config, "source": s.Source, "state": s.StateDir} {
		if name == "state" && v == "" {
			continue // optional
		}
		if v == "" || !strings.HasPrefix(v, "/") {
			return fmt.Errorf("service %s path %q must be absolute", name, v)
		}
		if strings.ContainsAny(v, "\n\r\x00\"\\$`") {
			return fmt.Errorf("service %s path %q contains a line break, quote, backslash or $; choose a plainer path", name, v)
		}
	}
	return nil
}

// The unit's choices, and why (docs/upgrades.md explains them to operators):
//   - Restart=always + RestartSec: a crash, an upgrade handover or a rollback all restart. 5 s keeps
//     the crash-loop guard's 3 fast deaths well clear of systemd's start rate limit (5 in 10 s).
//   - SuccessExitStatus/RestartForceExitStatus=75: the "upgrade pending" exit is a success that
//     restarts, not a failure that marks the unit failed.
//   - KillMode=process: stop signals the daemon only; runners (in their own shim sessions, but in
//     this cgroup) keep running their jobs and recovery adopts them.
//   - Delegate=yes: the unit's cgroup subtree is the daemon's to manage, so it can move itself into
//     <unit>/daemon and give each runner a cgroup of its own under <unit>/runners (tracked, limited
//     and killed whole: docs/runner-processes.md, "cgroups"); systemd leaves that subtree alone.
//   - Type=notify: the daemon says READY=1 once the journal is open, live runners are adopted and
//     the target loops run (not after GitHub answered), keeps STATUS= current, and on stop says
//     STOPPING=1 with EXTEND_TIMEOUT_USEC covering the drain.
//   - WatchdogSec=WatchdogTimeout: the daemon sends WATCHDOG=1 only while its supervisor makes
//     progress (internal/daemon watchdogLoop), every third of it, so one slow check is not a
//     restart; 2 min leaves a wedged daemon's runners unattended briefly, and no healthy step
//     comes near it (a wedged target loop is detected after 3 call timeouts, 6 min, first).
//     The restart comes long after the crash-loop guard's 30 s window: it never counts as a
//     failed start of an upgrade.
//   - TimeoutStopSec: the config's shutdown_drain_timeout at install + StopMargin, so systemd never
//     SIGKILLs mid-drain; reinstall after raising the drain timeout (the daemon extends it anyway).
//   - No NoNewPrivileges, ProtectSystem, ProtectHome, PrivateTmp or PrivateDevices: runners are this
//     unit's children and inherit its sandbox, and jobs use sudo (setuid), install packages into /usr
//     and /etc, keep caches in $HOME, share /tmp with Docker bind mounts (the Docker daemon sees the
//     host's /tmp, not a private one) and use /dev/kvm or /dev/fuse.
//   - What is kept takes away only what would let one job disturb the host's other runners:
//     realtime scheduling and changing the host name. TasksMax/LimitNOFILE lift the per-service
//     defaults that several parallel builds exhaust.
var unitTemplate = template.Must(template.New("unit").Funcs(template.FuncMap{"q": systemdQuote}).Parse(
	`# Generated by "runner-manager service install"; a reinstall overwrites it.
# Local changes belong in a drop-in: systemctl edit runner-manager
[Unit]
Description=runner-manager: autoscaled GitHub Actions just-in-time runners
Documentation=https://github.com/runner-manager/runner-manager/blob/main/docs/upgrades.md
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={{q .Binary}} daemon --config {{q .Config}} {{.Flag}} {{q .Source}}
Restart=always
RestartSec=5s
SuccessExitStatus=75
RestartForceExitStatus=75
KillMode=process
Delegate=yes
KillSignal=SIGTERM
TimeoutStopSec={{.StopTimeoutSeconds}}s
WatchdogSec={{.WatchdogSeconds}}s
ConfigurationDirectory=runner-manager
StateDirectory=runner-manager
StateDirectoryMode=0700
TasksMax=infinity
LimitNOFILE=65536
RestrictRealtime=yes
ProtectHostname=yes

[Install]
WantedBy=multi-user.target
`))

// SystemdUnit renders the unit file for s.
func SystemdUnit(s Spec) (string, error) {
	return s.render(unitTemplate, struct {
		Spec
		Flag string
	}{s, SourceFlag})
}

// systemdQuote quotes one word of a unit-file command line or assignment: systemd splits on
// whitespace, unquotes "...", and expands % specifiers everywhere.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if !strings.ContainsAny(s, " \t';") {
		return s
	}
	return `"` + s + `"` // Spec.check rejected the characters that would need escaping inside quotes
}

// unitState is what `systemctl show` says about the unit.
type unitState struct {
	Loaded bool
	Active string // ActiveState (SubState), e.g. "active (running)"
	PID    int
}

// parseSystemctlShow reads `systemctl show -p LoadState,ActiveState,SubState,MainPID` output.
func parseSystemctlShow(out []byte) unitState {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	st := unitState{Loaded: kv["LoadState"] == "loaded", Active: kv["ActiveState"]}
	if sub := kv["SubState"]; sub != "" && st.Active != "" {
		st.Active += " (" + sub + ")"
	}
	st.PID, _ = strconv.Atoi(kv["MainPID"])
	return st
}
