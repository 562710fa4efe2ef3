//go:build e2e

package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packagedFiles are the files every package installs (the .rpm and .apk list them without the
// directories; the .deb is checked by installing it).
var packagedFiles = []string{
	"/usr/bin/runner-manager",
	"/etc/runner-manager/config.toml",
	"/usr/share/man/man1/runner-manager.1.gz",
	"/usr/share/man/man1/runner-manager-service-install.1.gz",
	"/usr/share/bash-completion/completions/runner-manager",
	"/usr/share/zsh/vendor-completions/_runner-manager",
	"/usr/share/fish/vendor_completions.d/runner-manager.fish",
}

// scriptCalls are what the maintainer scripts must run, so the unit has exactly one owner.
var scriptCalls = []string{
	"runner-manager service install $root --source /usr/bin/runner-manager",
	"runner-manager service uninstall $root --refuse-busy",
}

// TestRpmContentsAndScripts reads the .rpm with rpm (Debian's package): its files, its config
// file, its dependencies and the scripts that call service install and uninstall.
func TestRpmContentsAndScripts(t *testing.T) {
	rpm := artifact(t, packages(t), "runner-manager-*.x86_64.rpm")
	files := strings.Fields(run(t, "rpm", "-qpl", rpm))
	for _, f := range packagedFiles {
		if !slices.Contains(files, f) {
			t.Errorf("the .rpm does not hold %s; it holds %v", f, files)
		}
	}
	if cfg := strings.Fields(run(t, "rpm", "-qpc", rpm)); !slices.Equal(cfg, []string{"/etc/runner-manager/config.toml"}) {
		t.Errorf("the .rpm's config files are %v, want the starter config alone (kept on upgrade)", cfg)
	}
	scripts := run(t, "rpm", "-qp", "--scripts", rpm)
	for _, want := range append(scriptCalls, "postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet") {
		if !strings.Contains(scripts, want) {
			t.Errorf("rpm -qp --scripts lacks %q:\n%s", want, scripts)
		}
	}
	if req := run(t, "rpm", "-qpR", rpm); !strings.Contains(req, "shadow-utils") {
		t.Errorf("the .rpm does not require shadow-utils (useradd for the runner users):\n%s", req)
	}
}

// TestApkContentsAndScripts unpacks the .apk (gzip members of tar streams: tar -i reads past each
// stream's end) and checks its files and install/deinstall scripts.
func TestApkContentsAndScripts(t *testing.T) {
	apk := artifact(t, packages(t), "runner-manager_*_x86_64.apk")
	dir := t.TempDir()
	run(t, "tar", "-C", dir, "-xzif", apk)
	for _, f := range packagedFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the .apk does not hold %s: %v", f, err)
		}
	}
	for script, want := range map[string]string{".post-install": scriptCalls[0], ".pre-deinstall": scriptCalls[1]} {
		b, err := os.ReadFile(filepath.Join(dir, script))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("the .apk's %s does not run %q (%v):\n%s", script, want, err, b)
		}
	}
	pkginfo, err := os.ReadFile(filepath.Join(dir, ".PKGINFO"))
	if err != nil || !strings.Contains(string(pkginfo), "depend = shadow") {
		t.Errorf("the .apk does not depend on shadow (%v):\n%s", err, pkginfo)
	}
}

// TestDebLintian runs lintian on the .deb: it must report nothing but the tags
// packaging/lintian-overrides explains.
func TestDebLintian(t *testing.T) {
	deb := artifact(t, packages(t), "runner-manager_*_amd64.deb")
	// stdout alone: lintian warns on stderr that it runs as root.
	out, err := exec.Command("lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", deb).Output()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("lintian (%v) reports tags packaging/lintian-overrides does not explain:\n%s", err, out)
	}
}
