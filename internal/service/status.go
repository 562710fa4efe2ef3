package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/heartbeat"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// DaemonStatus is what the running daemon reports about itself through its status API.
type DaemonStatus struct {
	Version           string
	ConfigPath        string
	ReloadOK          bool
	ReloadAt          time.Time // of the last reload attempt
	ReloadError       string    // operator-facing reason when !ReloadOK (never a secret)
	LastGitHubContact time.Time // zero: never
	RunnersBusy       int
	RunnersIdle       int
}

// StatusSource is the daemon's status API; nil or an error means the daemon is not reachable.
type StatusSource interface {
	DaemonStatus(ctx context.Context) (DaemonStatus, error)
}

// GitHubStaleAfter is how long without a successful GitHub call makes the daemon "degraded".
const GitHubStaleAfter = 10 * time.Minute

// Status is everything `service status` shows.
type Status struct {
	System        System
	Agent         bool // a LaunchAgent's (service --user): its commands differ (hints)
	Installed     bool
	Unit          string
	Record        Record // zero if there is no install record
	RecordErr     string // the install record exists but cannot be read
	BinaryVersion string // of the private copy; "" with BinaryErr
	BinaryErr     string
	SourceVersion string
	SourceErr     string
	Active        string // service manager's state, "" if unknown
	PID           int
	Log           string        // where the daemon's log goes, when not the journal (launchd, Windows)
	Daemon        *DaemonStatus // nil when not reachable
	DaemonErr     string
	Guard         selfupdate.GuardState
	Heartbeat     heartbeat.Record // zero with HeartbeatErr
	HeartbeatErr  string           // why there is no record to show
}

// Status gathers the install, the service manager's view and, through src, the daemon's own.
// It never fails: whatever cannot be learned is shown as unknown with the reason.
func (m *Manager) Status(ctx context.Context, src StatusSource) Status {
	p := m.Paths
	s := Status{System: m.System, Agent: p.Agent(), Unit: p.UnitFile(m.System), Log: p.LogFile}
	if m.System == Windows {
		var err error
		if s.Active, s.PID, s.Installed, err = m.windowsState(); err != nil {
			s.Installed, s.Active = true, "" // unknown: the SCM did not answer
		}
	} else if _, err := os.Stat(p.onDisk(s.Unit)); err == nil {
		s.Installed = true
	}
	if !s.Installed {
		return s
	}
	rec, ok, err := ReadRecord(p.onDisk(p.StateDir))
	switch {
	case err != nil:
		s.RecordErr = m.shown(err)
	case ok:
		s.Record = rec
	}
	if s.Record.Binary == "" {
		s.Record.Binary, s.Record.Config = p.Binary(), p.ConfigFile
	}
	s.BinaryVersion, s.BinaryErr = m.probe(ctx, p.Binary())
	if s.Record.Source != "" {
		s.SourceVersion, s.SourceErr = m.probe(ctx, s.Record.Source)
	}
	s.Guard, _ = selfupdate.ReadGuardState(p.onDisk(p.StateDir))
	if hb, err := heartbeat.Read(p.onDisk(p.StateDir)); err != nil {
		s.HeartbeatErr = m.shown(err)
	} else {
		s.Heartbeat = hb
	}
	s.Active, s.PID = m.serviceState(ctx)
	if src == nil {
		s.DaemonErr = "daemon not reachable"
		return s
	}
	ds, err := src.DaemonStatus(ctx)
	if err != nil {
		s.DaemonErr = "daemon not reachable: " + err.Error()
		return s
	}
	s.Daemon = &ds
	return s
}

func (m *Manager) probe(ctx context.Context, path string) (string, string) {
	v, err := selfupdate.ProbeVersion(ctx, m.Probe, m.Paths.onDisk(path), 5*time.Second)
	if err != nil {
		return "", m.shown(err)
	}
	return v, ""
}

// shown is err's text with the service's paths, not their on-disk prefix under Root.
func (m *Manager) shown(err error) string {
	if m.Paths.Root == "" {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), m.Paths.Root, "")
}

func (m *Manager) serviceState(ctx context.Context) (string, int) {
	if m.System == Windows {
		state, pid, _, err := m.windowsState()
		if err != nil {
			return "", 0
		}
		return state, pid
	}
	run := m.Run
	if run == nil {
		run = selfupdate.ExecRun
	}
	if m.System == Launchd {
		out, err := run(ctx, "launchctl", "print", m.launchdTarget())
		if err != nil {
			return "not loaded", 0
		}
		st := parseLaunchctlPrint(out)
		return st.Active, st.PID
	}
	out, err := run(ctx, "systemctl", "show", UnitName, "--property=LoadState,ActiveState,SubState,MainPID")
	if err != nil {
		return "", 0
	}
	st := parseSystemctlShow(out)
	return st.Active, st.PID
}

// Running reports whether the service manager has the daemon running.
func (s Status) Running() bool {
	return s.PID > 0 && (strings.HasPrefix(s.Active, "active") || s.Active == "running")
}

// Verdict is the one-line health summary, worst problem first.
func (s Status) Verdict(now time.Time) string {
	h := s.hints()
	switch {
	case !s.Installed:
		return "not installed: run " + h.privileged(h.install)
	case s.BinaryErr != "":
		return "broken: the service binary does not run; run " + h.privileged(h.install) + " again"
	case s.Active == "":
		return "unknown: the service manager did not answer; try `" + h.inspect + "`"
	case strings.HasPrefix(s.Active, "failed"):
		return "failed: the service is not running; see `" + h.logs + "`"
	case !s.Running():
		return "stopped: start it with " + h.privileged(h.start)
	case s.Heartbeat.PID == s.PID && s.Heartbeat.Stale(now):
		// A wedged daemon may still answer its status socket; its heartbeat says it stopped.
		return fmt.Sprintf("stalled: the daemon made no progress for %s (heartbeat); %srestart it with %s; see `%s`",
			age(now, s.Heartbeat.Time), h.watchdog, h.privileged(h.restart), h.logs)
	case s.Daemon == nil:
		return fmt.Sprintf("unknown: the service runs (pid %d) but its status is not reachable", s.PID)
	case !s.Daemon.ReloadOK:
		return "degraded: the last config reload failed; the previous config keeps running"
	case s.Daemon.LastGitHubContact.IsZero():
		return "degraded: no successful GitHub contact yet"
	case now.Sub(s.Daemon.LastGitHubContact) > GitHubStaleAfter:
		return "degraded: no successful GitHub contact for " + age(now, s.Daemon.LastGitHubContact)
	}
	v := "healthy"
	switch up := s.SourceVersion; {
	case up != "" && up == s.Guard.Rejected:
		v += fmt.Sprintf("; source version %s was rolled back after a crash loop and is not retried", up)
	case up != "" && up != s.Daemon.Version:
		v += fmt.Sprintf("; upgrade to %s pending (it waits for running jobs to finish)", up)
	}
	return v
}

const unknownDaemon = "unknown (daemon not reachable)"

// Render writes the status as `service status` prints it.
func (s Status) Render(w io.Writer, now time.Time) error {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-16s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "runner-manager service (%s)\n", s.System)
	if !s.Installed {
		if s.System == Windows {
			line("installed", "no (the service control manager has no service %s)", s.Unit)
		} else {
			line("installed", "no (%s does not exist)", s.Unit)
		}
		line("health", "%s", s.Verdict(now))
		_, err := io.WriteString(w, b.String())
		return err
	}
	inst := "yes: " + s.Unit
	if !s.Record.InstalledAt.IsZero() {
		inst += fmt.Sprintf(" (installed %s)", stamp(s.Record.InstalledAt))
	}
	line("installed", "%s", inst)
	switch {
	case s.Active == "":
		line("service", "unknown (the service manager did not answer)")
	case s.PID > 0:
		line("service", "%s, pid %d", s.Active, s.PID)
	default:
		line("service", "%s", s.Active)
	}
	running := unknownDaemon
	if s.Daemon != nil {
		running = s.Daemon.Version
	}
	line("version", "%s", running)
	line("binary", "%s", versionOf(s.Record.Binary, s.BinaryVersion, s.BinaryErr))
	if s.Record.Source != "" {
		line("source", "%s", versionOf(s.Record.Source, s.SourceVersion, s.SourceErr))
	}
	if s.RecordErr != "" {
		line("source", "unknown: %s", s.RecordErr)
	}
	config := s.Record.Config
	if s.Daemon != nil && s.Daemon.ConfigPath != "" {
		config = s.Daemon.ConfigPath
	}
	line("config", "%s", config)
	if d := s.Daemon; d != nil {
		reload := "ok"
		if !d.ReloadOK {
			reload = "FAILED"
		}
		if !d.ReloadAt.IsZero() {
			reload += fmt.Sprintf(" at %s (%s ago)", stamp(d.ReloadAt), age(now, d.ReloadAt))
		}
		if !d.ReloadOK {
			reload += ": " + d.ReloadError
		}
		line("last reload", "%s", reload)
		if d.LastGitHubContact.IsZero() {
			line("github contact", "never")
		} else {
			line("github contact", "%s (%s ago)", stamp(d.LastGitHubContact), age(now, d.LastGitHubContact))
		}
		line("runners owned", "%d (%d busy, %d idle)", d.RunnersBusy+d.RunnersIdle, d.RunnersBusy, d.RunnersIdle)
	} else {
		line("last reload", unknownDaemon)
		line("github contact", unknownDaemon)
		line("runners owned", unknownDaemon)
	}
	if hb := s.Heartbeat; hb.PID != 0 {
		line("heartbeat", "%s (%s ago), pid %d, config generation %d", stamp(hb.Time), age(now, hb.Time), hb.PID, hb.Generation)
	} else {
		line("heartbeat", "none: %s", s.HeartbeatErr)
	}
	if g := s.Guard; g.Rejected != "" {
		line("rollback", "%s rolled back at %s: %s", g.Rejected, stamp(g.RolledBackAt), g.RollbackWhy)
	}
	line("health", "%s", s.Verdict(now))
	_, err := io.WriteString(w, b.String())
	return err
}

func versionOf(path, version, errText string) string {
	if errText != "" {
		return fmt.Sprintf("%s: does not run (%s)", path, errText)
	}
	return fmt.Sprintf("%s: %s", path, version)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func age(now, t time.Time) string { return now.Sub(t).Truncate(time.Second).String() }
