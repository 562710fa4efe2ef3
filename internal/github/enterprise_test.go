package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestEnterpriseScope: an enterprise target registers, lists, finds and removes its runners at the
// enterprise endpoints, in an enterprise runner group, mints registration tokens there (the
// scale-set chain), and is never polled for jobs.
func TestEnterpriseScope(t *testing.T) {
	s := newSim(t)
	s.srv.AddEnterprise("acme-corp", "acme")
	gid := s.srv.CreateEnterpriseRunnerGroup("acme-corp", "CI")
	c, _ := s.tokenClient(s.srv.AddToken(ghsim.TokenOptions{Scopes: []string{"manage_runners:enterprise"}}))
	ctx := context.Background()
	ent, err := ScopeOf(config.Target{Name: "e", Enterprise: "acme-corp"})
	if err != nil || !ent.IsEnterprise() || ent.IsOrg() || ent.String() != "enterprises/acme-corp" {
		t.Fatalf("ScopeOf = %+v (%s), %v", ent, ent, err)
	}

	id, err := c.RunnerGroupID(ctx, ent, "ci")
	if err != nil || id != gid {
		t.Fatalf("RunnerGroupID = %d, %v; want %d", id, err, gid)
	}
	if _, err := c.RunnerGroupID(ctx, ent, "nope"); err == nil || !strings.Contains(err.Error(), `enterprise acme-corp has no runner group "nope"`) {
		t.Fatalf("unknown group: %v", err)
	}
	jit, err := c.GenerateJITConfig(ctx, ent, "rm-e1", []string{"self-hosted", "linux"}, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if rs := s.srv.Runners(); len(rs) != 1 || rs[0].Scope != "enterprises/acme-corp" || rs[0].GroupID != gid || rs[0].ID != jit.RunnerID {
		t.Fatalf("runners %+v", rs)
	}
	rs, err := c.ListRunners(ctx, ent)
	if r, ok := runnerNamed(rs, "rm-e1"); err != nil || len(rs) != 1 || !ok || r.ID != jit.RunnerID {
		t.Fatalf("ListRunners = %+v, %v", rs, err)
	}
	if err := c.DeleteRunner(ctx, ent, jit.RunnerID); err != nil {
		t.Fatal(err)
	}
	if rs, _ := c.ListRunners(ctx, ent); len(rs) != 0 {
		t.Fatalf("deleted runner still listed: %+v", rs)
	}
	if tok, err := c.RegistrationToken(ctx, ent.String()); err != nil || tok == "" {
		t.Fatalf("RegistrationToken: %v", err)
	}
	if _, err := c.Jobs(ctx, ent, []string{"linux"}); !errors.Is(err, ErrEnterpriseNoJobs) {
		t.Fatalf("Jobs of an enterprise: %v, want ErrEnterpriseNoJobs", err)
	}
	var hits int
	for _, r := range s.Requests() {
		if strings.Contains(r.Endpoint, "/enterprises/{enterprise}/") {
			hits++
		}
	}
	if hits < 6 {
		t.Fatalf("%d requests on enterprise endpoints: %+v", hits, s.Requests())
	}
}

// TestEnterpriseRefusal: a token without the enterprise scope is told which scope, and that no
// fine-grained token or App can do it.
func TestEnterpriseRefusal(t *testing.T) {
	s := newSim(t)
	s.srv.AddEnterprise("acme-corp", "acme")
	c, _ := s.tokenClient(s.token) // repo, admin:org
	_, err := c.ListRunners(context.Background(), EnterpriseScope("acme-corp"))
	if err == nil || !strings.Contains(err.Error(), "manage_runners:enterprise") || !strings.Contains(err.Error(), "fine-grained tokens cannot") {
		t.Fatalf("refusal: %v", err)
	}
	if IsTerminal(err) == false {
		t.Fatalf("a missing scope is not retried: %v", err)
	}
}

// TestParseScope reads what Scope.String writes.
func TestParseScope(t *testing.T) {
	for _, s := range []Scope{OrgScope("acme"), {Owner: "acme", Repo: "api"}, EnterpriseScope("acme-corp")} {
		if got, err := ParseScope(s.String()); err != nil || got != s {
			t.Errorf("ParseScope(%s) = %+v, %v", s, got, err)
		}
	}
}

// TestEnterpriseNeeds: at enterprise level every credential needs the one classic scope, and an
// App's remedy says it cannot.
func TestEnterpriseNeeds(t *testing.T) {
	ent := EnterpriseScope("acme-corp")
	for _, kind := range []config.AuthKind{config.AuthTokenFile, config.AuthDeviceFlow, config.AuthApp} {
		if n := Needs(kind, true, ent); len(n) != 1 || n[0].Name != "manage_runners:enterprise" {
			t.Errorf("%s: Needs = %+v", kind, n)
		}
	}
	if !(Need{Name: "manage_runners:enterprise"}).CoveredBy([]string{"admin:enterprise"}) {
		t.Error("admin:enterprise does not cover manage_runners:enterprise")
	}
	if r := permRunners.remedy(config.AuthApp, ent, ""); !strings.Contains(r, "GitHub Apps cannot manage enterprise runners") {
		t.Errorf("App remedy: %s", r)
	}
}
