package daemon

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/journal"
)

// TestTwoAccounts: a daemon with [github] on one simulator and an [[account]] on another runs a
// job of each account's target, registering each runner with its own account's GitHub and
// credential (the other simulator never sees it).
func TestTwoAccounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := ghsimtest.Start(t, ghsim.Options{})
	other.CreateRepo("globex", "api")
	other.CreateRepo("globex", "api2")
	pkg, err := ghsim.BuildFakeRunnerPackage(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other.ServeRunnerPackage(pkg)
	otherToken := filepath.Join(e.dir, "other-token")
	e.writeFile(otherToken, other.AddToken(ghsim.TokenOptions{Login: "globex-ops"}))
	e.writeConfig(withGlobex(other.URL(), otherToken, "points_per_minute = 300\n", "api", "api2"))
	e.start()

	webJob, err := e.srv.QueueJob("acme/web", []string{"linux"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	apiJob, err := other.QueueJob("globex/api", []string{"linux"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	snap := e.waitStatus("both jobs done and their runners concluded", func(s status.Snapshot) bool {
		return jobDone(e.srv, webJob) && jobDone(other, apiJob) && len(s.Runners) == 0
	})
	for _, st := range snap.Targets {
		if want := map[string]string{"web": "", "api": "globex", "api2": "globex"}[st.Name]; st.Account != want {
			t.Errorf("status of target %s: account %q, want %q", st.Name, st.Account, want)
		}
	}
	// Each account's governor paces at its own ceiling: 600 (the default) and the account's 300.
	fams := e.scrape()
	for account, want := range map[string]float64{"default": 600, "globex": 300} {
		if v, ok := sample(fams, "runner_manager_github_points_share_per_minute", map[string]string{"account": account}); !ok || v != want {
			t.Errorf("points share of account %s = %v (present %v), want %v", account, v, ok, want)
		}
	}
	// Each account's targets are planned against its own ceiling: globex's two targets at 1s need
	// more than its 300 points/min allow and stretch; [github]'s one target keeps its interval.
	for account, want := range map[string]struct {
		ceiling float64
		stretch func(float64) bool
	}{"default": {600, func(v float64) bool { return v == 1 }}, "globex": {300, func(v float64) bool { return v > 1 }}} {
		l := map[string]string{"account": account}
		if v, ok := sample(fams, "runner_manager_github_points_per_minute_ceiling", l); !ok || v != want.ceiling {
			t.Errorf("ceiling of account %s = %v (present %v), want %v", account, v, ok, want.ceiling)
		}
		if v, ok := sample(fams, "runner_manager_github_poll_stretch", l); !ok || !want.stretch(v) {
			t.Errorf("poll stretch of account %s = %v (present %v)", account, v, ok)
		}
	}
	// Each account's last contact and poll plan are its own, in the scrape and in status.
	const contact = "runner_manager_github_last_successful_contact_timestamp_seconds"
	for account, ceiling := range map[string]int{"default": 600, "globex": 300} {
		if v, ok := sample(fams, contact, map[string]string{"account": account}); !ok || v < 1e9 {
			t.Errorf("last contact of account %s = %v (present %v), want a Unix time", account, v, ok)
		}
		if pl := snap.GitHubPollingByAccount[account]; pl == nil || pl.PointsPerMinute != ceiling || (pl.Stretch > 1) != (account == "globex") {
			t.Errorf("status's poll plan of account %s: %+v, want a ceiling of %d, stretched for globex only", account, pl, ceiling)
		}
	}
	if pl := snap.GitHubPolling; pl == nil || pl.PointsPerMinute != 600 || pl.Stretch != 1 {
		t.Errorf("status's github_polling %+v, want [github]'s plan as before", pl)
	}
	// Each account's requests are counted under its own label: exactly the registrations its
	// simulator received, and no more requests in all than its simulator has seen since.
	const jit = "POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig"
	for account, srv := range map[string]*ghsim.Server{"default": e.srv, "globex": other} {
		reg, _ := sample(fams, "runner_manager_github_requests_total", map[string]string{"account": account, "endpoint": jit})
		all, _ := sample(fams, "runner_manager_github_requests_total", map[string]string{"account": account})
		seen := srv.Requests()
		total := 0
		for _, n := range seen {
			total += n
		}
		if reg < 1 || reg != float64(seen[jit]) {
			t.Errorf("account %s: %v JIT registrations counted, its simulator received %d", account, reg, seen[jit])
		}
		if all < 1 || all > float64(total) {
			t.Errorf("account %s: %v requests counted, its simulator received %d", account, all, total)
		}
	}
	for _, c := range []struct {
		srv   *ghsim.Server
		scope string
	}{{e.srv, "acme/web"}, {other, "globex/api"}} {
		regs := c.srv.Registrations()
		if len(regs) == 0 {
			t.Fatalf("%s: no registration", c.scope)
		}
		for _, r := range regs {
			if r.Scope != c.scope {
				t.Errorf("a runner of %s was registered on the simulator of another account: %+v", r.Scope, r)
			}
		}
	}
	// A reload removing globex (and its targets) ends its series with the config that removed it.
	e.writeConfig(webTarget(1))
	snap = e.waitStatus("globex's targets removed", func(s status.Snapshot) bool { return len(s.Targets) == 1 })
	if _, ok := snap.GitHubPollingByAccount["globex"]; ok || len(snap.GitHubPollingByAccount) != 1 {
		t.Errorf("status's poll plans after globex was removed: %v", snap.GitHubPollingByAccount)
	}
	fams = e.scrape()
	if v, ok := sample(fams, contact, map[string]string{"account": "globex"}); ok {
		t.Errorf("the last contact of the removed account globex is still exported: %v", v)
	}
	if _, ok := sample(fams, contact, map[string]string{"account": "default"}); !ok {
		t.Error("the last contact of [github], still in use, is no longer exported")
	}
}

func jobDone(s *ghsim.Server, id int64) bool {
	j, ok := s.Job(id)
	return ok && j.Status == ghsim.StatusCompleted
}

// TestAccountGovernors: each account builds its own client, whose governor has the account's own
// ceiling; a fleet host's spend of an [[account]] is published under its name, and the fleet's
// word on it reaches that account's governor alone.
func TestAccountGovernors(t *testing.T) {
	var built []config.GitHub
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("ghp_x"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	g := newGitHub(&config.Config{
		GitHub:   config.GitHub{APIURL: "http://127.0.0.1:1", TokenFile: tok, PointsPerMinute: 600},
		Accounts: []config.Account{{Name: "ci", GitHub: config.GitHub{APIURL: "http://127.0.0.1:2", TokenFile: tok, PointsPerMinute: 120}}},
	}, func(_ string, gc config.GitHub) (*github.Client, error) {
		built = append(built, gc)
		return github.NewFromConfig(gc, state, github.Options{})
	})
	_, def, _, err := g.scoped(context.Background(), config.Target{Name: "a", Repository: "o/a"})
	if err != nil {
		t.Fatal(err)
	}
	_, ci, _, err := g.scoped(context.Background(), config.Target{Name: "b", Repository: "o/b", Account: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if def == ci || def.Governor() == ci.Governor() {
		t.Fatal("two accounts share one client or governor")
	}
	if def.Governor().Options().PointsPerMinute != 600 || ci.Governor().Options().PointsPerMinute != 120 {
		t.Fatalf("ceilings %d and %d, want 600 and 120", def.Governor().Options().PointsPerMinute, ci.Governor().Options().PointsPerMinute)
	}
	if len(built) != 2 || built[1].APIURL != "http://127.0.0.1:2" {
		t.Fatalf("built %+v", built)
	}
	if _, _, _, err := g.scoped(context.Background(), config.Target{Name: "c", Repository: "o/c", Account: "nope"}); err == nil {
		t.Fatal("a target of an unknown account got a client")
	}
	share := accountShare(&github.FleetShare{Hosts: 2, Others: map[string][]github.Spend{"": {{Points: 5}}, "ci:": {{Points: 7}}}}, "ci")
	if share.Hosts != 2 || len(share.Others) != 1 || share.Others[""][0].Points != 7 {
		t.Fatalf("the ci account's share of the fleet: %+v", share)
	}
}

// TestEnterpriseTarget: an enterprise target of an [[account]] holding an enterprise owner's
// classic token takes its demand from the enterprise's workflow_job deliveries (its poll reads no
// jobs), registers its runner at the enterprise, and the runner runs a job of one of the
// enterprise's organisations.
func TestEnterpriseTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.AddEnterprise("acme-corp", "acme")
	entToken := filepath.Join(e.dir, "ent-token")
	e.writeFile(entToken, e.srv.AddToken(ghsim.TokenOptions{Login: "ent-owner", Scopes: []string{"manage_runners:enterprise"}}))
	e.writeConfig(fmt.Sprintf(`
[[account]]
name = "enterprise"
api_url = %q
token_file = %q

[[target]]
name = "ent"
enterprise = "acme-corp"
account = "enterprise"
labels = ["linux"]
max_runners = 1
`, e.srv.URL(), entToken))
	e.start()
	id, err := e.srv.QueueJob("acme/web", []string{"linux"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	snap := e.waitStatus("the job done and its runner concluded", func(s status.Snapshot) bool {
		return jobDone(e.srv, id) && len(s.Runners) == 0
	})
	regs := e.srv.Registrations()
	if len(regs) != 1 || regs[0].Scope != "enterprises/acme-corp" || regs[0].JobID != id {
		t.Fatalf("registrations %+v, want one enterprise runner that ran job %d", regs, id)
	}
	if len(snap.Targets) != 1 || !strings.Contains(snap.Targets[0].Warning, "webhook deliveries") {
		t.Fatalf("status %+v: want the target's warning that its demand is its deliveries", snap.Targets)
	}
	for route := range e.srv.Requests() {
		if strings.Contains(route, "/actions/runs") {
			t.Errorf("an enterprise target read jobs: %s", route)
		}
	}
}

// TestAccountReloadClasses: an [[account]] added by a reload is live; a change of its api_url (its
// identity: where its targets' runners are registered) is rejected whole, naming the account, and
// the last good config keeps running.
func TestAccountReloadClasses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	account := func(name, api string) string {
		return fmt.Sprintf("\n[[account]]\nname = %q\napi_url = %q\ntoken_file = %q\n", name, api, e.tokenFile)
	}
	e.writeConfig(webTarget(1) + account("ci", e.srv.URL()))
	e.waitStatus("the account added live", func(s status.Snapshot) bool { return s.Config.LastReload.OK && s.Config.Generation == 2 })
	e.writeConfig(webTarget(1) + account("ci", "http://127.0.0.1:1"))
	snap := e.waitStatus("the api_url change rejected", func(s status.Snapshot) bool { return !s.Config.LastReload.OK })
	if errs := snap.Config.LastReload.Error; len(errs) != 1 || !strings.Contains(errs[0], `changing account "ci" api_url needs a daemon restart`) {
		t.Fatalf("reload error %q, want one naming the account's api_url", errs)
	}
	if snap.Config.Generation != 2 {
		t.Fatalf("generation %d after a rejected reload, want 2", snap.Config.Generation)
	}
}

// withGlobex is webTarget(1) and an [[account]] globex on apiURL with the token in tokenFile
// (settings: more lines of its section), with a target of each of its repositories, polled every
// second.
func withGlobex(apiURL, tokenFile, settings string, repos ...string) string {
	cfg := webTarget(1) + fmt.Sprintf("\n[[account]]\nname = \"globex\"\napi_url = %q\ntoken_file = %q\n%s", apiURL, tokenFile, settings)
	for _, r := range repos {
		cfg += fmt.Sprintf("\n[[target]]\nname = %q\nrepository = \"globex/%s\"\naccount = \"globex\"\nlabels = [\"linux\"]\nmax_runners = 1\npoll_interval = \"1s\"\n", r, r)
	}
	return cfg
}

// TestContactByAccountAfterRestart: an account whose credential broke before a restart keeps its
// own last contact from the journal, in status and in its metric series, while [github]'s answers
// move only [github]'s: before contacts were kept per account, both showed the host's newest.
func TestContactByAccountAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	broken := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Millisecond)
	if err := os.MkdirAll(e.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(e.stateDir, "journal"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for account, at := range map[string]time.Time{"globex": broken, "default": broken.Add(time.Hour)} {
		if err := j.RecordGitHubContact(t.Context(), account, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	other := ghsimtest.Start(t, ghsim.Options{})
	other.CreateRepo("globex", "api")
	otherToken := filepath.Join(e.dir, "other-token")
	e.writeFile(otherToken, "ghp_"+"revokedrevokedrevokedrevokedrevoked0") // the simulator knows no such token: 401
	e.writeConfig(withGlobex(other.URL(), otherToken, "", "api"))
	e.start()

	snap := e.waitStatus("[github]'s first contact since the start", func(s status.Snapshot) bool {
		return s.GitHubLastContactByAccount["default"].After(broken.Add(time.Hour))
	})
	if got := snap.GitHubLastContactByAccount["globex"]; !got.Equal(broken) {
		t.Errorf("status: globex's last contact %v, want its own from the journal, %v", got, broken)
	}
	if !snap.GitHubLastContact.Equal(snap.GitHubLastContactByAccount["default"]) {
		t.Errorf("status: github_last_contact %v, want the newest of all, [github]'s %v", snap.GitHubLastContact, snap.GitHubLastContactByAccount["default"])
	}
	const contact = "runner_manager_github_last_successful_contact_timestamp_seconds"
	fams := e.scrape()
	if v, ok := sample(fams, contact, map[string]string{"account": "globex"}); !ok || math.Abs(v-float64(broken.UnixMilli())/1e3) > 1e-3 {
		t.Errorf("globex's last contact series = %v (present %v), want its own journal time %v", v, ok, float64(broken.UnixMilli())/1e3)
	}
	if v, ok := sample(fams, contact, map[string]string{"account": "default"}); !ok || v <= float64(broken.Add(time.Hour).Unix()) {
		t.Errorf("[github]'s last contact series = %v (present %v), want its answer since the start", v, ok)
	}
}
