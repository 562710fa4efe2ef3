package service

import "fmt"

// hints are the commands Verdict tells an operator to run, as this service manager and mode
// spell them; every system's row goes through the same verdicts (TestEveryHintIsRead).
type hints struct {
	install, start, restart, inspect, logs string
	watchdog                               string // what restarts a stalled daemon by itself, with a trailing ", or "
	elevated                               string // how install, start and restart must be run, when not in the command (sudo)
}

func (s Status) hints() hints {
	switch {
	case s.System == Windows:
		return hints{install: "runner-manager service install", start: "runner-manager service start",
			restart: "Restart-Service runner-manager", inspect: "sc.exe query runner-manager",
			logs: s.Log, elevated: "as an Administrator"}
	case s.System == Launchd && s.Agent:
		return hints{install: "runner-manager service install --user", start: "runner-manager service start --user",
			restart: "launchctl kickstart -k gui/<uid>/" + LaunchdLabel, inspect: "launchctl print gui/<uid>/" + LaunchdLabel,
			logs: "tail ~/Library/Logs/runner-manager.log"}
	case s.System == Launchd:
		return hints{install: "sudo runner-manager service install", start: "sudo runner-manager service start",
			restart: "sudo launchctl kickstart -k system/" + LaunchdLabel, inspect: "sudo launchctl print system/" + LaunchdLabel,
			logs: "tail /var/log/runner-manager.log"}
	}
	return hints{install: "sudo runner-manager service install", start: "sudo runner-manager service start",
		restart: "sudo systemctl restart runner-manager", inspect: "systemctl status runner-manager",
		logs: "journalctl -u runner-manager", watchdog: fmt.Sprintf("systemd's watchdog restarts it within %s, or ", WatchdogTimeout)}
}

// privileged quotes a command that needs the service manager's privileges, saying how to get
// them where the command cannot (an elevated prompt on Windows).
func (h hints) privileged(cmd string) string {
	if h.elevated == "" {
		return "`" + cmd + "`"
	}
	return "`" + cmd + "` " + h.elevated
}
