package github

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v62/github"
)

// Package is one runner release for an os/arch, as the downloads endpoint lists it.
type Package struct {
	URL      string
	SHA256   string // hex, as GitHub publishes it
	Version  string // x.y.z
	Filename string
}

// ErrVersionNotOffered means the pinned runner version is not (or no longer) listed by GitHub,
// which lists only current releases; a runner cache holding that version may keep using it.
var ErrVersionNotOffered = errors.New("runner version not offered by GitHub")

var (
	opDLRepo = op{"GET /repos/{owner}/{repo}/actions/runners/downloads", "list runner downloads", permRunners}
	opDLOrg  = op{"GET /orgs/{org}/actions/runners/downloads", "list runner downloads", permRunners}
	opDLEnt  = op{"GET /enterprises/{enterprise}/actions/runners/downloads", "list runner downloads", permRunners}
	verRE    = regexp.MustCompile(`-(\d+)\.(\d+)\.(\d+)\.(?:tar\.gz|zip)$`)
)

// RunnerPackage picks the runner package for os/arch (GitHub's spelling: linux|osx|win,
// x64|arm64|arm) at version "latest" (or "") or a pinned "x.y.z".
func (c *Client) RunnerPackage(ctx context.Context, s Scope, os, arch, version string) (Package, error) {
	o := pick(s, opDLRepo, opDLOrg, opDLEnt)
	list, err := callScoped(ctx, c, s, o, scoped[[]*gh.RunnerApplicationDownload]{
		repo: c.gh.Actions.ListRunnerApplicationDownloads,
		org:  c.gh.Actions.ListOrganizationRunnerApplicationDownloads,
		ent:  c.gh.Enterprise.ListRunnerApplicationDownloads,
	})
	if err != nil {
		return Package{}, err
	}
	version = strings.TrimPrefix(version, "v")
	var best Package
	var bestKey [3]int
	var offered []string
	for _, d := range list {
		if d.GetOS() != os || d.GetArchitecture() != arch {
			continue
		}
		m := verRE.FindStringSubmatch(d.GetFilename())
		if m == nil {
			continue
		}
		var key [3]int
		for i := range key {
			key[i], _ = strconv.Atoi(m[i+1])
		}
		p := Package{URL: d.GetDownloadURL(), SHA256: d.GetSHA256Checksum(), Version: m[1] + "." + m[2] + "." + m[3], Filename: d.GetFilename()}
		offered = append(offered, p.Version)
		if version == "" || version == "latest" {
			if best.URL == "" || cmp3(key, bestKey) > 0 {
				best, bestKey = p, key
			}
		} else if p.Version == version {
			return p, nil
		}
	}
	if best.URL != "" {
		return best, nil
	}
	if len(offered) == 0 {
		return Package{}, &Error{Target: s.String(), Op: o.what,
			Detail: fmt.Sprintf("GitHub offers no runner package for %s/%s: this host's platform is not supported by actions/runner", os, arch)}
	}
	return Package{}, &Error{Target: s.String(), Op: o.what, Err: ErrVersionNotOffered,
		Detail: fmt.Sprintf("runner version %s for %s/%s is not offered by GitHub (it offers %s): set runner_version = \"latest\" or pin an offered version",
			version, os, arch, strings.Join(offered, ", "))}
}

func cmp3(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}
