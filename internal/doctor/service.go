package doctor

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/selfupdate"
)

// checkUnit checks that the service is installed and enabled (started at boot). Enabled is read
// from the tree, as systemctl enable leaves it (a link in multi-user.target.wants, the unit's
// WantedBy), so it is also checked under --root; a launchd plist in LaunchDaemons loads at boot.
func checkUnit(_ context.Context, e *Env) []Finding {
	sys := service.Detect()
	unit := e.Paths.UnitFile(sys)
	f := Finding{Check: "service unit", Subject: unit}
	if _, ok, err := lstat(e.onDisk(unit)); err != nil || !ok {
		f.Status, f.Detail = Warn, "not installed: nothing starts the daemon at boot or restarts it"
		f.Do = "sudo runner-manager service install"
		return []Finding{f}
	}
	if sys == service.Launchd {
		f.Status, f.Detail = OK, "installed; launchd loads it at boot"
		return []Finding{f}
	}
	wants := filepath.Join(e.Paths.UnitDir, "multi-user.target.wants", service.UnitName)
	if _, ok, _ := lstat(e.onDisk(wants)); !ok {
		f.Status, f.Detail = Warn, "installed but not enabled: it does not start at boot"
		f.Do = "sudo systemctl enable " + service.UnitName
		return []Finding{f}
	}
	f.Status, f.Detail = OK, "installed and enabled"
	return []Finding{f}
}

// checkService is `service status`'s verdict: the service manager's and the daemon's own view.
func checkService(ctx context.Context, e *Env) []Finding {
	f := Finding{Check: "service"}
	if why := e.notHere(); why != "" || e.Service == nil {
		f.Status, f.Detail = Skip, why
		return []Finding{f}
	}
	st := e.Service(ctx)
	if !st.Installed {
		f.Status, f.Detail = Skip, "not installed (see service unit)"
		return []Finding{f}
	}
	v := st.Verdict(e.Now())
	f.Detail, f.Do = v, "runner-manager service status shows the rest"
	switch word, _, _ := strings.Cut(v, ":"); {
	case strings.HasPrefix(v, "healthy"):
		f.Status, f.Do = OK, ""
	case word == "broken" || word == "failed":
		f.Status = Fail
	default:
		f.Status = Warn
	}
	return []Finding{f}
}

// checkUpgradeSource applies selfupdate.CheckSource, the rule the daemon applies before it runs a
// candidate, to the source binary the install watches: only root may be able to change it.
func checkUpgradeSource(_ context.Context, e *Env) []Finding {
	f := Finding{Check: "upgrade source"}
	rec, ok, err := service.ReadRecord(e.onDisk(e.Paths.StateDir))
	switch {
	case err != nil:
		f.Status, f.Detail = Fail, e.shown(err.Error())
		return []Finding{f}
	case !ok || rec.Source == "":
		f.Status, f.Detail = Skip, "no install record: service install names the source it watches"
		return []Finding{f}
	}
	f.Subject = rec.Source
	if err := selfupdate.CheckSource(e.onDisk(rec.Source), e.EUID); err != nil {
		f.Status, f.Detail = Fail, e.shown(err.Error())
		f.Do = "chown root and chmod go-w the file and every directory above it"
		return []Finding{f}
	}
	f.Status, f.Detail = OK, "only root can change it or the directories above it"
	return []Finding{f}
}
