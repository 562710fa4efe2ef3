package github

import (
	"slices"
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

func TestNeeds(t *testing.T) {
	repo, org := Scope{Owner: "acme", Repo: "api"}, Scope{Owner: "acme"}
	names := func(ns []Need) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name+":"+n.Level)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		kind    config.AuthKind
		classic bool
		s       Scope
		want    []string
	}{
		{"App repository", config.AuthApp, false, repo, []string{"administration:write", "actions:read"}},
		{"App organization", config.AuthApp, false, org, []string{"organization_self_hosted_runners:write", "actions:read", "metadata:read"}},
		{"classic repository", config.AuthTokenFile, true, repo, []string{"repo:"}},
		{"classic organization", config.AuthTokenFile, true, org, []string{"admin:org:", "repo:", "read:org:"}},
		{"fine-grained repository", config.AuthTokenFile, false, repo, []string{"Administration: read and write:", "Actions: read:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(Needs(tc.kind, tc.classic, tc.s)); !slices.Equal(got, tc.want) {
				t.Fatalf("Needs = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNeedSatisfied(t *testing.T) {
	for _, tc := range []struct {
		need   Need
		scopes []string
		perms  map[string]string
		want   bool
	}{
		{Need{Name: "read:org"}, []string{"admin:org"}, nil, true}, // admin:org includes write:org includes read:org
		{Need{Name: "read:org"}, []string{"write:org"}, nil, true},
		{Need{Name: "admin:org"}, []string{"write:org", "repo"}, nil, false},
		{Need{Name: "repo"}, []string{"public_repo"}, nil, false}, // a narrower scope never covers a broader one
		{Need{Name: "repo"}, []string{}, nil, false},
		{Need{Name: "administration", Level: "write"}, nil, map[string]string{"administration": "read"}, false},
		{Need{Name: "actions", Level: "read"}, nil, map[string]string{"actions": "write"}, true},
		{Need{Name: "actions", Level: "read"}, nil, map[string]string{}, false},
	} {
		got := tc.need.CoveredBy(tc.scopes)
		if tc.perms != nil {
			got = tc.need.GrantedBy(tc.perms)
		}
		if got != tc.want {
			t.Errorf("%+v with scopes %q / permissions %v = %v, want %v", tc.need, tc.scopes, tc.perms, got, tc.want)
		}
	}
}
