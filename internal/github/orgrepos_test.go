package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// orgReposFront serves GET /orgs/acme/repos as GitHub does (repository objects, ETag, 304 on
// If-None-Match) and passes every other request to the simulator, which lacks that endpoint.
func orgReposFront(t *testing.T, s *sim, repos []map[string]any) *httptest.Server {
	t.Helper()
	target, _ := url.Parse(s.srv.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/orgs/acme/repos" {
			proxy.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		body, _ := json.Marshal(repos)
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}))
	t.Cleanup(front.Close)
	return front
}

func TestOrgDemandWithTokenListsOrgRepos(t *testing.T) {
	s := newSim(t)
	s.srv.CreateRepo("acme", "web")
	s.srv.CreateRepo("acme", "old")
	a, _ := s.srv.QueueJob("acme/api", []string{"linux"}, -1)
	b, _ := s.srv.QueueJob("acme/web", []string{"linux"}, -1)
	s.srv.QueueJob("acme/old", []string{"linux"}, -1) // archived: not polled
	repo := func(name string, archived bool) map[string]any {
		return map[string]any{"name": name, "full_name": "acme/" + name, "archived": archived, "owner": map[string]any{"login": "acme", "type": "Organization"}}
	}
	front := orgReposFront(t, s, []map[string]any{repo("api", false), repo("web", false), repo("old", true), repo("gone", false)})
	o := s.options()
	c, err := NewFromConfig(config.GitHub{APIURL: front.URL, TokenFile: writeToken(t, s.token)}, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var before int
	for poll := 0; poll < 2; poll++ {
		before = len(s.Requests())
		jobs, err := c.QueuedJobs(ctx, OrgScope("acme"), []string{"linux"})
		if err != nil {
			t.Fatal(err)
		}
		ids := jobIDs(jobs)
		if !slices.Equal(ids, []int64{a, b}) {
			t.Fatalf("poll %d: jobs %v, want %v (acme/gone answers 404 and is skipped)", poll, ids, []int64{a, b})
		}
	}
	listed := 0
	for _, r := range s.Requests()[before:] { // the second, idle poll
		if !r.NotModified && r.Status != http.StatusNotFound {
			t.Fatalf("idle org poll sent a counted request: %+v", r)
		}
		if r.Endpoint == "GET /orgs/{org}/repos" {
			listed++
		}
	}
	if listed != 0 {
		t.Fatalf("repository list fetched %d times in the second poll, want 0 (it is reused for %d passes)", listed, orgListEvery)
	}
	before = len(s.Requests())
	for range orgListEvery - 1 {
		if _, err := c.QueuedJobs(ctx, OrgScope("acme"), []string{"linux"}); err != nil {
			t.Fatal(err)
		}
	}
	listed = 0
	for _, r := range s.Requests()[before:] {
		if r.Endpoint == "GET /orgs/{org}/repos" {
			listed++
		}
	}
	if listed != 1 {
		t.Fatalf("repository list fetched %d times in the next %d polls, want 1", listed, orgListEvery-1)
	}
}

// Issue 15.6: one repository that refuses the read (403) does not stop an organisation's demand:
// it is skipped and named, the other repositories' jobs come back with the error.
func TestOrgDemandSkipsARepositoryThatRefuses(t *testing.T) {
	s := newSim(t)
	s.srv.CreateRepo("acme", "web")
	s.srv.CreateRepo("acme", "secret")
	web, _ := s.srv.QueueJob("acme/web", []string{"linux"}, -1)
	s.srv.QueueJob("acme/secret", []string{"linux"}, -1)
	s.srv.AddFault(ghsim.Fault{Path: "/repos/acme/secret/actions/runs", Kind: ghsim.FaultStatus, Status: http.StatusForbidden})
	repo := func(name string) map[string]any {
		return map[string]any{"name": name, "full_name": "acme/" + name, "owner": map[string]any{"login": "acme", "type": "Organization"}}
	}
	front := orgReposFront(t, s, []map[string]any{repo("secret"), repo("web")})
	c, err := NewFromConfig(config.GitHub{APIURL: front.URL, TokenFile: writeToken(t, s.token)}, t.TempDir(), s.options())
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.QueuedJobs(context.Background(), OrgScope("acme"), []string{"linux"})
	var partial *PartialError
	if !errors.As(err, &partial) || !partial.Partial() || partial.Skipped["acme/secret"] == nil || len(partial.Skipped) != 1 {
		t.Fatalf("err = %v, want a PartialError naming acme/secret", err)
	}
	if !strings.Contains(err.Error(), "acme/secret") {
		t.Fatalf("the message does not name the repository: %v", err)
	}
	if ids := jobIDs(jobs); !slices.Equal(ids, []int64{web}) {
		t.Fatalf("jobs %v, want acme/web's %d", ids, web)
	}
}
