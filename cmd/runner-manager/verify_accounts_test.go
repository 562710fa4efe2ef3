package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestVerifyAccounts: verify checks each target with its own account's credential: the [github]
// token reaches acme, the [[account]]'s enterprise token reaches the enterprise; the report names
// the account and plans each account under its own ceiling.
func TestVerifyAccounts(t *testing.T) {
	w := newVerifyWorld(t)
	w.srv.AddEnterprise("acme-corp", "acme")
	entTok := filepath.Join(w.dir, "ent-token")
	if err := os.WriteFile(entTok, []byte(w.srv.AddToken(ghsim.TokenOptions{Login: "ent-owner", Scopes: []string{"manage_runners:enterprise"}})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := fmt.Sprintf(`
[[account]]
name = "enterprise"
api_url = %q
token_file = %q
points_per_minute = 300
`, w.srv.URL(), entTok) + apiTarget + `
[[target]]
name = "ent"
enterprise = "acme-corp"
account = "enterprise"
scale_set = "linux"
`
	r, code := w.report(w.withToken(targets))
	if code != exitOK {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if len(r.Targets) != 2 || r.Targets[0].Account != "" || r.Targets[1].Account != "enterprise" || r.Targets[1].Scope != "enterprises/acme-corp" {
		t.Fatalf("targets %+v", r.Targets)
	}
	if c := check(t, r, "ent", "permissions"); !strings.Contains(c.Detail, "manage_runners:enterprise") {
		t.Fatalf("enterprise permissions: %+v", c)
	}
	if p, ok := r.AccountPlans["enterprise"]; !ok || p.Ceiling != 300 {
		t.Fatalf("account plans %+v", r.AccountPlans)
	}

	// A fine-grained token cannot reach an enterprise at all.
	if err := os.WriteFile(entTok, []byte(w.srv.AddToken(ghsim.TokenOptions{FineGrained: true})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, code = w.report(w.withToken(targets))
	if c := check(t, r, "ent", "permissions"); code != exitNotReady || !strings.Contains(c.Detail, "fine-grained tokens cannot manage enterprise runners") {
		t.Fatalf("fine-grained: exit %d, %+v", code, c)
	}

	// The same enterprise target with the [github] token (repo, admin:org): the scope it lacks.
	r, code = w.report(w.withToken(strings.Replace(targets, "account = \"enterprise\"\n", "", 1)))
	if code != exitNotReady {
		t.Fatalf("exit %d, want %d: %+v", code, exitNotReady, r)
	}
	if c := check(t, r, "ent", "permissions"); !strings.Contains(c.Detail, "lacks the scope `manage_runners:enterprise`") {
		t.Fatalf("missing scope: %+v", c)
	}
}

// TestVerifyEnterpriseApp: an App cannot manage enterprise runners; verify refuses the file as
// validate does, saying so.
func TestVerifyEnterpriseApp(t *testing.T) {
	w := newVerifyWorldAt(t, nil)
	w.srv.AddEnterprise("acme-corp", "acme")
	out, code := w.run("--config", w.config(w.app(nil), "[webhook]\nlisten = \"127.0.0.1:0\"\nsecret_file = \""+w.secret()+"\"\n[[target]]\nname = \"ent\"\nenterprise = \"acme-corp\"\n"))
	if code != exitFailure || !strings.Contains(out, "GitHub Apps cannot manage enterprise runners") {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailure, out)
	}
}

// secret writes a webhook secret file and returns its path.
func (w *verifyWorld) secret() string {
	w.t.Helper()
	p := filepath.Join(w.dir, "secret")
	if err := os.WriteFile(p, []byte("s\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}
