package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

func TestRunnerPackage(t *testing.T) {
	s := newSim(t)
	for _, p := range []ghsim.Package{
		{Filename: "actions-runner-linux-x64-2.317.0.tar.gz", OS: "linux", Arch: "x64", Version: "2.317.0", SHA256: "aa17"},
		{Filename: "actions-runner-linux-x64-2.9.0.tar.gz", OS: "linux", Arch: "x64", Version: "2.9.0", SHA256: "aa09"},
		{Filename: "actions-runner-linux-x64-2.320.1.tar.gz", OS: "linux", Arch: "x64", Version: "2.320.1", SHA256: "aa20"},
		{Filename: "actions-runner-linux-arm64-2.321.0.tar.gz", OS: "linux", Arch: "arm64", Version: "2.321.0", SHA256: "bb21"},
		{Filename: "actions-runner-win-x64-2.321.0.zip", OS: "win", Arch: "x64", Version: "2.321.0", SHA256: "cc21"},
	} {
		s.srv.ServeRunnerPackage(p)
	}
	c, _ := s.tokenClient(s.token)
	ctx := context.Background()
	cases := []struct {
		scope             Scope
		os, arch, version string
		want              string // version; "" = error
		wantErr           string
	}{
		{repoScope, "linux", "x64", "latest", "2.320.1", ""},
		{repoScope, "linux", "x64", "", "2.320.1", ""},
		{repoScope, "linux", "x64", "2.9.0", "2.9.0", ""},
		{OrgScope("acme"), "linux", "x64", "v2.317.0", "2.317.0", ""},
		{repoScope, "win", "x64", "latest", "2.321.0", ""},
		{repoScope, "linux", "x64", "2.300.0", "", "runner version 2.300.0 for linux/x64 is not offered by GitHub (it offers 2.317.0, 2.9.0, 2.320.1)"},
		{repoScope, "osx", "arm64", "latest", "", "no runner package for osx/arm64"},
	}
	for _, tc := range cases {
		p, err := c.RunnerPackage(ctx, tc.scope, tc.os, tc.arch, tc.version)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s/%s@%s: err = %v, want %q", tc.os, tc.arch, tc.version, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.Version != tc.want || !strings.HasSuffix(p.URL, "/"+p.Filename) || p.SHA256 == "" || !strings.Contains(p.Filename, tc.want) {
			t.Errorf("%s/%s@%s = %+v, %v; want %s", tc.os, tc.arch, tc.version, p, err, tc.want)
		}
	}
	if _, err := c.RunnerPackage(ctx, repoScope, "linux", "x64", "2.300.0"); !errors.Is(err, ErrVersionNotOffered) || !IsTerminal(err) {
		t.Fatalf("not offered: %v", err)
	}
}
