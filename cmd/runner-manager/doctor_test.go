package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
	"github.com/runner-manager/runner-manager/internal/doctor"
	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// doctorTree is a tree (--root) with the service installed from selfupdate's stand-in binary
// and what a careless image leaves: a token others can read, a state dir others can list, a slot
// user's home others can read, the second slot user missing, the unit not enabled.
func doctorTree(t *testing.T) string {
	t.Helper()
	root := installFakeSource(t)
	put := func(p, content string, mode os.FileMode) {
		t.Helper()
		d := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
		// Exactly mode, whatever the umask, and also when it replaces a file (etc/passwd below).
		if err := atomicfile.Write(d, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	put("etc/runner-manager/config.toml", `[daemon]
max_runners = 2
runner_user_prefix = "rm-r"

[github]
token_file = "/etc/runner-manager/token"

[[target]]
name = "web"
repository = "acme/web"
`, 0o600)
	put("etc/runner-manager/token", "ghp_doctorTreeSecret0123456789\n", 0o644)
	put("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nrm-r0:x:4242:4242:runner-manager runner slot 0:/home/rm-r0:/usr/sbin/nologin\n", 0o644)
	if _, _, code := runStatusCmd(t, serviceCmd(func() time.Time { return time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC) }),
		"install", "--root", root, "--source", "/usr/local/bin/runner-manager"); code != exitOK {
		t.Fatalf("service install --root: exit %d", code)
	}
	home := filepath.Join(root, "home", "rm-r0")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // a test run by a user owns what it makes: the uid then is its own
		if err := os.Chown(home, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	} else {
		put("etc/passwd", "rm-r0:x:"+strconv.Itoa(os.Geteuid())+":0::/home/rm-r0:/usr/sbin/nologin\n", 0o644)
	}
	if err := os.Chmod(filepath.Join(root, "var", "lib", "runner-manager"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// treeDeps are doctor's dependencies for a tree: the disk is measured as 10 GiB free; the kernel
// is never asked (--root).
func treeDeps(t *testing.T) doctorDeps {
	return doctorDeps{
		now:       func() time.Time { return time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC) },
		freeBytes: func(string) (uint64, error) { return 10 << 30, nil },
		cgroups:   func() (string, error) { t.Error("doctor --root asked this host's cgroups"); return "", nil },
	}
}

func runDoctor(t *testing.T, d doctorDeps, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runCommand(newDoctorCmdWith(d), args, strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), code
}

// TestDoctorUnderRoot runs doctor on a prepared tree: the table and --json (golden), then --fix,
// which repairs the modes and says so but creates no user in a tree, then doctor again.
func TestDoctorUnderRoot(t *testing.T) {
	root := doctorTree(t)
	steps := []struct {
		golden string
		args   []string
		code   int
	}{
		{"tree.golden", nil, exitFailure},
		{"tree.json.golden", []string{"--json"}, exitFailure},
		{"fix.golden", []string{"--fix"}, exitOK},
		{"after-fix.golden", nil, exitOK},
	}
	for _, s := range steps {
		out, code := runDoctor(t, treeDeps(t), append([]string{"--root", root}, s.args...)...)
		if code != s.code {
			t.Fatalf("doctor %v: exit %d, want %d\n%s", s.args, code, s.code, out)
		}
		if strings.Contains(out, "doctorTreeSecret") {
			t.Fatalf("doctor %v printed the token:\n%s", s.args, out)
		}
		golden.Check(t, filepath.Join("testdata", "doctor", s.golden), []byte(strings.ReplaceAll(out, root, "$ROOT")), *update)
	}
	for p, want := range map[string]os.FileMode{"var/lib/runner-manager": 0o700, "home/rm-r0": 0o700, "etc/runner-manager/token": 0o600} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("after --fix /%s: %v, %v; want mode %04o", p, fi.Mode().Perm(), err, want)
		}
	}
}

// TestDoctorOnline runs doctor on this host against the simulator: verify's checks for the
// target, and the clock against the Date header of the simulator's answers, skewed by the
// doctor's own clock; without a credential the online part fails with exit 4.
func TestDoctorOnline(t *testing.T) {
	w := newVerifyWorld(t)
	good := w.withToken("[[target]]\nname = \"api\"\nrepository = \"acme/api\"\n")
	deps := func(skew time.Duration) doctorDeps {
		return doctorDeps{
			now:       func() time.Time { return time.Now().Add(skew) },
			sleep:     func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
			freeBytes: func(string) (uint64, error) { return 10 << 30, nil },
			cgroups:   func() (string, error) { return "/sys/fs/cgroup/test", nil },
		}
	}
	findings := func(out string) map[string]doctor.Finding {
		var r doctor.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		m := map[string]doctor.Finding{}
		for _, f := range r.Findings {
			m[f.Check+"/"+f.Subject] = f
		}
		return m
	}
	tests := []struct {
		name   string
		config string
		skew   time.Duration
		github doctor.Status
		clock  doctor.Status
		code   int // -1: decided by the host's own findings too
	}{
		{"in step", good, 0, doctor.OK, doctor.OK, -1},
		{"clock five minutes ahead", good, 5 * time.Minute, doctor.OK, doctor.Fail, exitFailure},
		{"clock 20 s behind", good, -20 * time.Second, doctor.OK, doctor.Warn, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runDoctor(t, deps(tt.skew), "--config", tt.config, "--json")
			fs := findings(out)
			if f := fs["github/api"]; f.Status != tt.github {
				t.Errorf("github finding %+v, want %s", f, tt.github)
			}
			if f := fs["clock skew/"]; f.Status != tt.clock {
				t.Errorf("clock finding %+v, want %s", f, tt.clock)
			}
			if tt.code >= 0 && code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
		})
	}
	// The token file is gone: nothing online can work, which outranks every host finding.
	if err := os.Remove(filepath.Join(w.dir, "token")); err != nil {
		t.Fatal(err)
	}
	out, code := runDoctor(t, deps(0), "--config", good)
	if code != exitNotAuthed || !strings.Contains(out, "no usable GitHub credential") {
		t.Errorf("without a token: exit %d, want %d\n%s", code, exitNotAuthed, out)
	}
}

// TestDoctorExit maps the worst finding to docs/exit-codes.md: 4 before 1 before 6 before 7.
func TestDoctorExit(t *testing.T) {
	fail := func(p verify.Problem) doctor.Finding { return doctor.Finding{Status: doctor.Fail, Problem: p} }
	tests := []struct {
		name string
		fs   []doctor.Finding
		code int
	}{
		{"warnings only", []doctor.Finding{{Status: doctor.Warn}, {Status: doctor.Skip}}, exitOK},
		{"a host check", []doctor.Finding{fail(verify.ProblemAccess), fail("")}, exitFailure},
		{"the credential", []doctor.Finding{fail(""), fail(verify.ProblemCredential)}, exitNotAuthed},
		{"access", []doctor.Finding{fail(verify.ProblemUnavailable), fail(verify.ProblemAccess)}, exitNotReady},
		{"unavailable", []doctor.Finding{fail(verify.ProblemUnavailable)}, exitUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := exitOK
			if err := doctorExit(doctor.Report{Findings: tt.fs}); err != nil {
				code = err.(*exitError).code
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
		})
	}
}
