package github

import (
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

func TestPermissionRemedies(t *testing.T) {
	repo, org := Scope{Owner: "acme", Repo: "api"}, OrgScope("acme")
	cases := []struct {
		kind  config.AuthKind
		scope Scope
		p     perm
		want  string
	}{
		{config.AuthApp, repo, permRunners, "the App lacks the `administration: write` permission on acme/api"},
		{config.AuthApp, org, permRunners, "the App lacks the `organization_self_hosted_runners: write` permission on acme"},
		{config.AuthApp, repo, permActions, "the App lacks the `actions: read` permission on acme/api"},
		{config.AuthTokenFile, org, permRunners, "the token lacks the `admin:org` scope (classic token) or the `Self-hosted runners: read and write` permission (fine-grained token) on acme"},
		{config.AuthDeviceFlow, repo, permRunners, "the signed-in user must be a repository admin of acme/api and the App needs the `administration: write` permission"},
		{config.AuthDeviceFlow, org, permRunners, "the signed-in user must be an organization owner of acme and the App needs the `organization_self_hosted_runners: write` permission"},
		{config.AuthApp, repo, perm{}, "Must have admin rights (check the credential's permissions on acme/api)"},
	}
	for _, tc := range cases {
		if got := tc.p.remedy(tc.kind, tc.scope, "Must have admin rights"); got != tc.want {
			t.Errorf("%s %s: %q\nwant %q", tc.kind, tc.scope, got, tc.want)
		}
	}
}

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		target config.Target
		want   string
		org    bool
		bad    bool
	}{
		{config.Target{Name: "a", Repository: "acme/api"}, "acme/api", false, false},
		{config.Target{Name: "b", Organization: "acme"}, "acme", true, false},
		{config.Target{Name: "c", Repository: "acme"}, "", false, true},
		{config.Target{Name: "d", Repository: "a/b/c"}, "", false, true},
		{config.Target{Name: "e"}, "", false, true},
	} {
		s, err := ScopeOf(tc.target)
		if (err != nil) != tc.bad || (!tc.bad && (s.String() != tc.want || s.IsOrg() != tc.org)) {
			t.Errorf("ScopeOf(%+v) = %v, %v", tc.target, s, err)
		}
	}
}
