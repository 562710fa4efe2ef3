package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// appKey returns one RSA key per test binary (generating one per test would dominate run time).
func appKey(t *testing.T) *rsa.PrivateKey {
	keyOnce.Do(func() {
		var err error
		if testKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return testKey
}

// appClient returns a client authenticating as App 42 (installApp installs it).
func (s *sim) appClient(installationID int64) (*Client, string) {
	s.t.Helper()
	return s.appClientAs(config.GitHub{AppID: 42, InstallationID: installationID})
}

// appClientAs is appClient with the App named as g names it (app_id or app_client_id).
func (s *sim) appClientAs(g config.GitHub) (*Client, string) {
	s.t.Helper()
	path, pemText := keyFile(s.t, appKey(s.t))
	g.APIURL, g.PrivateKeyFile = s.srv.URL(), path
	c, err := NewFromConfig(g, s.t.TempDir(), s.options())
	if err != nil {
		s.t.Fatal(err)
	}
	return c, pemText
}

// keyFile writes key as a PEM file (0600) and returns its path and text.
func keyFile(t *testing.T, key *rsa.PrivateKey) (path, pemText string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "app.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, string(pemBytes)
}

// addOrgRepo creates organisation owner with repository name, outside any installation, and
// returns the repository's scope.
func (s *sim) addOrgRepo(owner, name string) Scope {
	s.srv.CreateOrg(owner)
	s.srv.CreateRepo(owner, name)
	return Scope{Owner: owner, Repo: name}
}

// jobIDs returns the jobs' ids, sorted.
func jobIDs(jobs []Job) []int64 {
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids
}

func (s *sim) installApp(account string, repos ...string) int64 {
	s.t.Helper()
	s.srv.CreateApp(42, &appKey(s.t).PublicKey)
	id, err := s.srv.CreateInstallation(42, account, repos...)
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

func TestAppOrgDemandAcrossInstallationRepos(t *testing.T) {
	s := newSim(t)
	s.srv.CreateRepo("acme", "web")
	s.srv.CreateRepo("acme", "secret")
	s.installApp("acme", "acme/api", "acme/web")
	a, _ := s.srv.QueueJob("acme/api", []string{"self-hosted", "linux"}, -1)
	b, _ := s.srv.QueueJob("acme/web", []string{"linux"}, -1)
	s.srv.QueueJob("acme/secret", []string{"linux"}, -1) // not in the installation
	c, _ := s.appClient(0)
	ctx := context.Background()
	org := OrgScope("acme")
	jobs, err := c.QueuedJobs(ctx, org, []string{"linux"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := jobIDs(jobs); !slices.Equal(ids, []int64{a, b}) {
		t.Fatalf("jobs %v, want %v", ids, []int64{a, b})
	}
	repos, err := c.Repositories(ctx, org)
	if err != nil || len(repos) != 2 {
		t.Fatalf("Repositories = %v, %v", repos, err)
	}
	// Idle polls of the org (repository list included) are free for the installation too.
	before := len(s.Requests())
	if _, err := c.QueuedJobs(ctx, org, []string{"linux"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Requests()[before:] {
		if !r.NotModified {
			t.Fatalf("idle org poll sent a counted request: %+v", r)
		}
	}
	jit, err := c.GenerateJITConfig(ctx, org, "runner-manager-1", []string{"linux"}, 0, "")
	if err != nil || jit.RunnerID == 0 {
		t.Fatalf("org JIT as App: %v", err)
	}
}

func TestAppFixedInstallationAndRevokedToken(t *testing.T) {
	s := newSim(t)
	id := s.installApp("acme")
	c, _ := s.appClient(id)
	ctx := context.Background()
	if _, err := c.ListRunners(ctx, repoScope); err != nil {
		t.Fatal(err)
	}
	// The installation token is rejected once: the App mints a new one and the call succeeds.
	s.srv.AddFault(ghsim.Fault{Path: "/repos/acme/api/actions/runners", Kind: ghsim.FaultRevokedToken, Count: 1})
	if _, err := c.ListRunners(ctx, repoScope); err != nil {
		t.Fatalf("after a revoked installation token: %v", err)
	}
	mints := 0
	for _, r := range s.Requests() {
		if r.Endpoint == "POST /app/installations/{id}/access_tokens" {
			mints++
		}
	}
	if mints != 2 {
		t.Fatalf("%d installation tokens minted, want 2", mints)
	}
}

func TestAppNotInstalled(t *testing.T) {
	s := newSim(t)
	s.installApp("acme")
	other := s.addOrgRepo("other", "x")
	c, _ := s.appClient(0)
	_, err := c.ListRunners(context.Background(), other)
	if err == nil || !strings.Contains(err.Error(), "GitHub App 42 is not installed on other: install the App on that account") || !IsTerminal(err) {
		t.Fatalf("err = %v", err)
	}
	if len(s.Sleeps()) != 0 {
		t.Fatal("a missing installation was retried")
	}
}

func TestAppUnknownKeyIsUnauthorized(t *testing.T) {
	s := newSim(t)
	s.srv.CreateApp(42, &appKey(t).PublicKey)
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := keyFile(t, other)
	c, err := NewFromConfig(config.GitHub{APIURL: s.srv.URL(), AppID: 42, PrivateKeyFile: path}, t.TempDir(), s.options())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListRunners(context.Background(), repoScope)
	var ue *UnauthorizedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "GitHub rejected the App JWT (401)") {
		t.Fatalf("err = %v", err)
	}
}

func TestAppBadKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(path, []byte("-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n"), 0o600)
	_, err := NewFromConfig(config.GitHub{AppID: 42, PrivateKeyFile: path}, t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "is not a PEM RSA key") || strings.Contains(err.Error(), "not a key") {
		t.Fatalf("err = %v", err)
	}
}

// Budgets are per credential: one installation running dry does not pause another's targets.
func TestAppBudgetsArePerInstallation(t *testing.T) {
	s := newSim(t)
	s.installApp("acme")
	beta := s.addOrgRepo("beta", "svc")
	if _, err := s.srv.CreateInstallation(42, "beta"); err != nil {
		t.Fatal(err)
	}
	c, _ := s.appClient(0)
	ctx := context.Background()
	s.srv.AddFault(ghsim.Fault{Path: "/repos/acme/api/actions/runners", Kind: ghsim.FaultBudgetExhausted, RetryAfter: 30 * time.Minute, Count: 1})
	var rl *RateLimitedError
	if _, err := c.ListRunners(ctx, repoScope); !errors.As(err, &rl) {
		t.Fatalf("acme: %v", err)
	}
	if _, err := c.ListRunners(ctx, beta); err != nil {
		t.Fatalf("beta was paused by acme's budget: %v", err)
	}
	sent := len(s.Requests())
	if _, err := c.ListRunners(ctx, repoScope); !errors.As(err, &rl) || len(s.Requests()) != sent {
		t.Fatalf("acme sent before its reset: %v", err)
	}
}

func TestAppTokenMintingServerErrorIsRetried(t *testing.T) {
	s := newSim(t)
	id := s.installApp("acme")
	c, _ := s.appClient(id)
	s.srv.AddFault(ghsim.Fault{Path: "/app/installations/*/access_tokens", Kind: ghsim.FaultStatus, Status: 502, Count: 2})
	if _, err := c.ListRunners(context.Background(), repoScope); err != nil {
		t.Fatal(err)
	}
	if len(s.Sleeps()) != 2 {
		t.Fatalf("sleeps %v, want 2 backoffs", s.Sleeps())
	}
}
