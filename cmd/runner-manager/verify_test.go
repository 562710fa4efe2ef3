package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/golden"
	"github.com/runner-manager/runner-manager/internal/scaleset"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// verifyWorld is a simulator with acme/api and the organization acme (three repositories, a
// runner group "builders" serving acme/web only).
type verifyWorld struct {
	t   *testing.T
	srv *ghsim.Server
	dir string
}

func newVerifyWorld(t *testing.T) *verifyWorld {
	t.Helper()
	return newVerifyWorldAt(t, ghsim.NewFakeClock(time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)))
}

// startSim runs a simulator on clock until the test ends.
func startSim(t *testing.T, clock ghsim.Clock) *ghsim.Server {
	t.Helper()
	return ghsimtest.Start(t, ghsim.Options{Clock: clock})
}

// newVerifyWorldAt runs the simulator on clock; nil is the wall clock, which App JWTs need (the
// App transport signs them with the real time).
func newVerifyWorldAt(t *testing.T, clock ghsim.Clock) *verifyWorld {
	t.Helper()
	srv := startSim(t, clock)
	for _, r := range []string{"api", "web", "docs"} {
		srv.CreateRepo("acme", r)
	}
	gid := srv.CreateRunnerGroup("acme", "builders")
	if err := srv.SetRunnerGroupRepos(gid, false, "acme/web"); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetRunnerGroupRepos(srv.CreateRunnerGroup("acme", "nobody"), false); err != nil {
		t.Fatal(err)
	}
	return &verifyWorld{t: t, srv: srv, dir: t.TempDir()}
}

// apiTarget is the repository target of verifyTargets, for scenarios that add others to it.
const apiTarget = `
[[target]]
name = "api"
repository = "acme/api"
labels = ["linux"]
`

// targets are the [[target]] tables every scenario verifies unless it names others.
const verifyTargets = apiTarget + `
[[target]]
name = "org"
organization = "acme"
runner_group = "builders"
labels = ["linux"]
poll_interval = "1m"
`

// config writes a config with the credential lines cred and the targets, and returns its path.
func (w *verifyWorld) config(cred, targets string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, "config.toml")
	body := fmt.Sprintf("[daemon]\nstate_dir = %q\n\n[github]\napi_url = %q\n%s\n%s", filepath.Join(w.dir, "state"), w.srv.URL(), cred, targets)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// withToken writes a config with a fresh classic token that has every scope verify asks for, and
// the targets, and returns its path.
func (w *verifyWorld) withToken(targets string) string {
	w.t.Helper()
	return w.config(w.token(w.srv.AddToken(ghsim.TokenOptions{})), targets)
}

// token writes tok to a 0600 file and returns the credential line naming it.
func (w *verifyWorld) token(tok string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return fmt.Sprintf("token_file = %q\n", p)
}

// app creates App 42 installed on acme with perms (nil: all it needs) and returns its credential lines.
func (w *verifyWorld) app(perms map[string]string) string {
	w.t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		w.t.Fatal(err)
	}
	p := filepath.Join(w.dir, "app.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(p, pemKey, 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.srv.CreateApp(42, &key.PublicKey)
	id, err := w.srv.CreateInstallation(42, "acme")
	if err != nil {
		w.t.Fatal(err)
	}
	if perms != nil {
		if err := w.srv.SetInstallationPermissions(id, perms); err != nil {
			w.t.Fatal(err)
		}
	}
	return fmt.Sprintf("app_id = 42\nprivate_key_file = %q\n", p)
}

// run executes `verify args...` and returns stdout+stderr (paths and URLs normalised) and the exit code.
func (w *verifyWorld) run(args ...string) (string, int) {
	w.t.Helper()
	// Retries of a failing GitHub back off on no clock at all.
	out, code := runCmd(newVerifyCmdWith(verifyDeps{sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}), args...)
	s := strings.ReplaceAll(out, w.srv.URL(), "{{SIM}}")
	return strings.ReplaceAll(s, w.dir, "{{DIR}}"), code
}

// report runs verify --json and decodes it.
func (w *verifyWorld) report(cfg string, args ...string) (verify.Report, int) {
	w.t.Helper()
	out, code := w.run(append([]string{"--config", cfg, "--json"}, args...)...)
	var r verify.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		w.t.Fatalf("verify --json printed no report (exit %d): %v\n%s", code, err, out)
	}
	return r, code
}

// check finds target's check called name.
func check(t *testing.T, r verify.Report, target, name string) verify.Check {
	t.Helper()
	for _, tr := range r.Targets {
		if tr.Name != target {
			continue
		}
		for _, c := range tr.Checks {
			if c.Name == name {
				return c
			}
		}
	}
	t.Fatalf("no check %q for target %q in %+v", name, target, r)
	return verify.Check{}
}

func TestVerifyReady(t *testing.T) {
	w := newVerifyWorld(t)
	cfg := w.withToken(verifyTargets)
	out, code := w.run("--config", cfg)
	if code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	golden.Check(t, "testdata/verify/ready.txt", []byte(out), *update)

	r, code := w.report(cfg)
	if code != exitOK || len(r.Targets) != 2 {
		t.Fatalf("exit %d, report %+v", code, r)
	}
	org := r.Targets[1]
	// An organization of 3 repositories: the runner list, a repository page, 2 run states each: 8 a
	// pass, every minute.
	if org.Repositories == nil || *org.Repositories != 3 || org.RequestsPerMinute != 8 {
		t.Fatalf("org target: repositories %v, %v requests/min; want 3 and 8", org.Repositories, org.RequestsPerMinute)
	}
	if r.Targets[0].RequestsPerMinute != 6 || r.Plan.Need != 14 || r.Targets[0].Rate == nil || r.Targets[0].Rate.Limit != 5000 {
		t.Fatalf("repository target %+v, plan %+v: want 6 requests/min (3 every 30 s), 14 points/min in all, a 5000/h budget", r.Targets[0], r.Plan)
	}
	if c := check(t, r, "org", "runner group"); c.Status != verify.Warn || !strings.Contains(c.Detail, "acme/web") {
		t.Fatalf("runner group check = %+v", c)
	}
}

// A classic token without admin:org fails the organization target (exit 6) and names the scope;
// the repository target, which needs only repo, passes.
func TestVerifyTokenLackingScope(t *testing.T) {
	w := newVerifyWorld(t)
	cfg := w.config(w.token(w.srv.AddToken(ghsim.TokenOptions{Scopes: []string{"repo"}})), verifyTargets)
	r, code := w.report(cfg)
	if code != exitNotReady {
		t.Fatalf("exit %d, want %d", code, exitNotReady)
	}
	if c := check(t, r, "api", "permissions"); c.Status != verify.OK {
		t.Fatalf("repository target permissions = %+v", c)
	}
	c := check(t, r, "org", "permissions")
	if c.Status != verify.Fail || c.Problem != verify.ProblemAccess || !strings.Contains(c.Detail, "`admin:org`") {
		t.Fatalf("org permissions = %+v, want a failure naming admin:org", c)
	}
	// GitHub refuses the runner list too, and verify says which permission that is.
	if c := check(t, r, "org", "target"); c.Status != verify.Fail || !strings.Contains(c.Detail, "403") {
		t.Fatalf("org target = %+v", c)
	}
}

// An App installation without organization_self_hosted_runners fails the organization target.
func TestVerifyAppMissingPermission(t *testing.T) {
	w := newVerifyWorldAt(t, nil)
	cred := w.app(map[string]string{"actions": "read", "administration": "write", "metadata": "read"})
	cfg := w.config(cred, verifyTargets)
	r, code := w.report(cfg)
	if code != exitNotReady {
		t.Fatalf("exit %d, want %d: %+v", code, exitNotReady, r)
	}
	if c := check(t, r, "api", "permissions"); c.Status != verify.OK || !strings.Contains(c.Detail, "administration: write") {
		t.Fatalf("repository target permissions = %+v", c)
	}
	c := check(t, r, "org", "permissions")
	if c.Status != verify.Fail || !strings.Contains(c.Detail, "`organization_self_hosted_runners: write`") {
		t.Fatalf("org permissions = %+v", c)
	}
	if c := check(t, r, "org", "credential"); !strings.Contains(c.Detail, "GitHub App installation") {
		t.Fatalf("credential = %+v", c)
	}

	// With every permission granted, the same App passes.
	w2 := newVerifyWorldAt(t, nil)
	if r, code := w2.report(w2.config(w2.app(nil), verifyTargets)); code != exitOK {
		t.Fatalf("App with its permissions: exit %d: %+v", code, r)
	}
}

// A runner group that serves no repository, and one that does not exist (or the credential cannot
// see), both fail.
func TestVerifyInvisibleRunnerGroup(t *testing.T) {
	w := newVerifyWorld(t)
	targets := `
[[target]]
name = "nobody"
organization = "acme"
runner_group = "nobody"
labels = ["linux"]

[[target]]
name = "ghost"
organization = "acme"
runner_group = "ghost"
labels = ["linux"]
`
	r, code := w.report(w.withToken(targets))
	if code != exitNotReady {
		t.Fatalf("exit %d, want %d", code, exitNotReady)
	}
	if c := check(t, r, "nobody", "runner group"); c.Status != verify.Fail || !strings.Contains(c.Detail, "serves no repository") {
		t.Fatalf("group serving no repository = %+v", c)
	}
	if c := check(t, r, "ghost", "runner group"); c.Status != verify.Fail || !strings.Contains(c.Detail, `no runner group "ghost"`) {
		t.Fatalf("missing group = %+v", c)
	}
}

// A fine-grained token lists no permissions: the read probes find a missing Actions permission.
func TestVerifyFineGrainedProbes(t *testing.T) {
	w := newVerifyWorld(t)
	tok := w.srv.AddToken(ghsim.TokenOptions{FineGrained: true, Permissions: map[string]string{"administration": "write", "organization_self_hosted_runners": "write"}})
	r, code := w.report(w.config(w.token(tok), verifyTargets))
	if code != exitNotReady {
		t.Fatalf("exit %d, want %d", code, exitNotReady)
	}
	if c := check(t, r, "api", "credential"); !strings.Contains(c.Detail, "fine-grained") {
		t.Fatalf("credential = %+v", c)
	}
	if c := check(t, r, "api", "workflow runs"); c.Status != verify.Fail || !strings.Contains(c.Detail, "`Actions: read`") {
		t.Fatalf("workflow runs = %+v", c)
	}
	if c := check(t, r, "api", "target"); c.Status != verify.OK {
		t.Fatalf("runner list = %+v", c)
	}
}

func TestVerifyExitCodes(t *testing.T) {
	w := newVerifyWorld(t)
	tok := w.srv.AddToken(ghsim.TokenOptions{})
	cfg := w.config(w.token(tok), verifyTargets)

	w.srv.RevokeToken(tok)
	r, code := w.report(cfg)
	if code != exitNotAuthed || check(t, r, "api", "credential").Problem != verify.ProblemCredential || len(r.Targets[0].Checks) != 1 {
		t.Fatalf("revoked token: exit %d, %+v", code, r)
	}
	if out, code := w.run("--config", cfg, "--target", "nope"); code != exitUsage || !strings.Contains(out, `no target "nope"`) {
		t.Fatalf("unknown target: exit %d\n%s", code, out)
	}
	if out, code := w.run("--config", filepath.Join(w.dir, "missing.toml")); code != exitUsage {
		t.Fatalf("missing config: exit %d\n%s", code, out)
	}
	if out, code := w.run("--config", w.config(w.token(""), verifyTargets)); code != exitNotAuthed || !strings.Contains(out, "no usable GitHub credential") {
		t.Fatalf("empty token file: exit %d\n%s", code, out)
	}

	// GitHub down: exit 7, try again later.
	w.srv.AddFault(ghsim.Fault{Path: "/rate_limit", Kind: ghsim.FaultStatus, Status: 502})
	good := w.withToken(verifyTargets)
	if r, code := w.report(good, "--target", "api"); code != exitUnavailable || len(r.Targets) != 1 {
		t.Fatalf("GitHub failing: exit %d, %+v", code, r)
	}
}

// A scale set is looked up in the Actions service: absent, the daemon will create it; present,
// verify names its id.
func TestVerifyScaleSet(t *testing.T) {
	w := newVerifyWorld(t)
	targets := `
[[target]]
name = "sets"
organization = "acme"
scale_set = "linux-big"
`
	cfg := w.withToken(targets)
	r, code := w.report(cfg)
	if c := check(t, r, "sets", "scale set"); code != exitOK || c.Status != verify.OK || !strings.Contains(c.Detail, "does not exist yet") {
		t.Fatalf("exit %d, scale set check %+v", code, c)
	}
	if r.Targets[0].RequestsPerMinute != 0 {
		t.Fatalf("a scale-set target polls no REST endpoint, yet costs %v requests/min", r.Targets[0].RequestsPerMinute)
	}

	gh, err := github.NewFromConfig(config.GitHub{APIURL: w.srv.URL(), TokenFile: filepath.Join(w.dir, "token")}, w.dir, github.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scaleset.New(scaleset.Options{APIURL: w.srv.URL(), WebURL: w.srv.URL(), Scope: "acme", Tokens: gh})
	if err != nil {
		t.Fatal(err)
	}
	set, err := sc.CreateScaleSet(context.Background(), scaleset.ScaleSet{Name: "linux-big", RunnerGroupID: 1, Labels: []string{"linux-big"}})
	if err != nil {
		t.Fatal(err)
	}
	r, code = w.report(cfg)
	if c := check(t, r, "sets", "scale set"); code != exitOK || !strings.Contains(c.Detail, fmt.Sprintf("exists (id %d)", set.ID)) {
		t.Fatalf("exit %d, scale set check %+v", code, c)
	}
}
