//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// TestScheduleZonesWithoutTheHostsDatabase: the binary reads IANA zones from the copy built into it
// (time/tzdata, internal/schedule), so `validate --offline` on a minimal host or CI image without
// a zone database accepts a schedule in Europe/Berlin and still refuses a misspelt zone. The host's
// databases (/usr/share/zoneinfo and the others Go looks in, Go's own zoneinfo.zip) are hidden
// under empty tmpfs mounts in a mount namespace of the command's own; the script checks they are.
func TestScheduleZonesWithoutTheHostsDatabase(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	switch {
	case err != nil:
		t.Fatalf("needs unshare (util-linux) to hide the zone databases: %v", err)
	case os.Geteuid() != 0:
		t.Fatal("needs root: it hides the zone databases in a mount namespace (unshare -m); run the e2e suite as root, as CI does")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	bin, dir := harness.Build(t), t.TempDir()
	write := func(name, zone string) string {
		p := filepath.Join(dir, name)
		body := "[github.device_flow]\nclient_id = \"Iv1.x\"\n[[target]]\nname = \"api\"\nrepository = \"acme/api\"\nmax_runners = 2\n" +
			"[[target.schedule]]\ncron = \"* 8-17 * * mon-fri\"\ntime_zone = \"" + zone + "\"\nmin_idle = 1\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := write("good.toml", "Europe/Berlin"), write("bad.toml", "Europe/Berln")
	script := `set -e
for d in /usr/share/zoneinfo /usr/share/lib/zoneinfo /usr/lib/locale/TZ /etc/zoneinfo "$1/lib/time"; do
	if [ -d "$d" ]; then mount -t tmpfs none "$d"; fi
done
if [ -e /usr/share/zoneinfo/Europe/Berlin ] || [ -e "$1/lib/time/zoneinfo.zip" ]; then echo "zone database still visible"; exit 3; fi
"$2" validate --offline --config "$3"
if "$2" validate --offline --config "$4"; then echo "bad zone accepted"; exit 4; fi
`
	out, err := exec.Command(unshare, "-m", "sh", "-c", script, "sh", strings.TrimSpace(string(goroot)), bin, good, bad).CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, want := range []string{"good.toml: valid", `bad.toml:9:1: target "api": schedule #1: time_zone "Europe/Berln" is not an IANA time zone name`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
