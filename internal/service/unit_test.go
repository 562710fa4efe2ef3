package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func defaultSpec(sys System) Spec {
	p := DefaultPaths(sys)
	return Spec{Binary: p.Binary(), Config: p.ConfigFile, Source: "/usr/local/bin/runner-manager", Log: p.LogFile}
}

func TestSystemdUnitGolden(t *testing.T) {
	unit, err := SystemdUnit(defaultSpec(Systemd))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/runner-manager.service", []byte(unit), *update)
	// The example operators read is the generated unit, not a hand-edited cousin.
	golden.Check(t, "../../examples/runner-manager.service", []byte(unit), *update)
	// The promises the unit carries; a golden update must not lose them silently.
	for _, must := range []string{"\nKillMode=process\n", "\nDelegate=yes\n", "\nRestart=always\n", "\nRestartForceExitStatus=75\n",
		"\nSuccessExitStatus=75\n", "\nStateDirectory=runner-manager\n", "\nConfigurationDirectory=runner-manager\n",
		"\nExecStart=/var/lib/runner-manager/bin/runner-manager daemon --config /etc/runner-manager/config.toml --upgrade-source /usr/local/bin/runner-manager\n"} {
		if !strings.Contains(unit, must) {
			t.Errorf("unit lacks %q", strings.TrimSpace(must))
		}
	}
	if !strings.Contains(unit, "\nWatchdogSec=120s\n") { // the daemon pings only while it makes progress
		t.Error("unit lacks WatchdogSec=120s")
	}
	for _, mustNot := range []string{"NoNewPrivileges", "ProtectSystem", "PrivateTmp", "ProtectHome", "PrivateDevices"} {
		if strings.Contains(unit, mustNot) {
			t.Errorf("unit sets %s, which runners inherit and jobs break on", mustNot)
		}
	}
}

func TestLaunchdPlistGolden(t *testing.T) {
	plist, err := LaunchdPlist(defaultSpec(Launchd))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/com.github.runner-manager.plist", []byte(plist), *update)
	dec := xml.NewDecoder(strings.NewReader(plist))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("plist is not well-formed XML: %v", err)
		}
	}
	for _, must := range []string{"<key>AbandonProcessGroup</key>\n\t<true/>", "<key>KeepAlive</key>\n\t<true/>"} {
		if !strings.Contains(plist, must) {
			t.Errorf("plist lacks %q", must)
		}
	}
}

func TestSpecQuotingAndRejects(t *testing.T) {
	unit, err := SystemdUnit(Spec{Binary: "/opt/runner manager/bin/rm", Config: "/etc/rm/100%.toml", Source: "/usr/bin/rm"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(unit, `ExecStart="/opt/runner manager/bin/rm" daemon --config /etc/rm/100%%.toml --upgrade-source /usr/bin/rm`) {
		t.Errorf("spaces or %% not quoted:\n%s", unit)
	}
	for _, bad := range []Spec{
		{Binary: "relative/rm", Config: "/c", Source: "/s"},
		{Binary: "/b", Config: "/c\nExecStartPre=/bin/evil", Source: "/s"},
		{Binary: "/b", Config: "/c", Source: "/s$HOME"},
	} {
		if _, err := SystemdUnit(bad); err == nil {
			t.Errorf("SystemdUnit(%+v) accepted", bad)
		}
		if _, err := LaunchdPlist(bad); err == nil {
			t.Errorf("LaunchdPlist(%+v) accepted", bad)
		}
	}
	plist, err := LaunchdPlist(Spec{Binary: "/b<&>", Config: "/c", Source: "/s"})
	if err != nil || !strings.Contains(plist, "<string>/b&lt;&amp;&gt;</string>") {
		t.Errorf("plist strings not escaped: %v\n%s", err, plist)
	}
}

// systemd-analyze verify checks the unit as systemd would load it, offline. Unknown keys and bad
// values are only warnings (exit 0), so any output is a failure. It needs ExecStart to exist, so the
// unit is installed into a temp tree with its real paths there.
func TestSystemdUnitVerifies(t *testing.T) {
	tool := livetest.Tool(t, "systemd-analyze", "run `make tools` (Debian package systemd)")
	dir := t.TempDir()
	fm := &fakeManager{}
	m := &Manager{System: Systemd, Run: fm.run, Clock: fixedNow, Logger: slog.New(slog.DiscardHandler), Paths: Paths{
		UnitDir: filepath.Join(dir, "units"), StateDir: filepath.Join(dir, "state"),
		BinDir: filepath.Join(dir, "state", "bin"), ConfigFile: filepath.Join(dir, "etc", "config.toml"),
	}}
	src := filepath.Join(dir, "source", "runner-manager")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(fakeBins, "v1.2.3")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(src, b, 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := m.Install(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), tool, "verify", rec.Unit)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", rec.Unit, err, out.String())
	}
}
