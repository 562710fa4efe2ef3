package runner

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// ResolveTTL bounds how long "latest" keeps meaning the same release: new releases are picked up
// within it, and idle hosts do not ask GitHub for the downloads list on every launch.
const ResolveTTL = time.Hour

// Lookup asks GitHub which package a configured runner version ("latest" or "2.x.y") is for one
// platform (GitHub's spelling, see Platform). The caller scopes it to a target's identity.
type Lookup func(ctx context.Context, goos, arch, version string) (Package, error)

// Packages decides which cached runner packages are wanted: it resolves configured versions to
// packages (remembering each answer for ResolveTTL) and prunes every cached package no resolved
// version names. Safe for concurrent use.
type Packages struct {
	cache *Cache
	now   func() time.Time

	mu       sync.Mutex
	resolved map[string]resolvedPackage // runner_version as configured -> package
}

type resolvedPackage struct {
	pkg Package
	at  time.Time
}

// NewPackages returns the package policy of cache; now is the clock of the TTL.
func NewPackages(cache *Cache, now func() time.Time) *Packages {
	return &Packages{cache: cache, now: now, resolved: map[string]resolvedPackage{}}
}

// Resolve returns the package version names ("" means "latest"), asking lookup only when no
// answer younger than ResolveTTL is remembered. lookup's error is returned as is.
func (p *Packages) Resolve(ctx context.Context, version string, lookup Lookup) (Package, error) {
	if version == "" {
		version = "latest"
	}
	p.mu.Lock()
	r, ok := p.resolved[version]
	p.mu.Unlock()
	if ok && p.now().Sub(r.at) < ResolveTTL {
		return r.pkg, nil
	}
	goos, arch := Platform()
	pkg, err := lookup(ctx, goos, arch, version)
	if err != nil {
		return Package{}, err
	}
	p.mu.Lock()
	p.resolved[version] = resolvedPackage{pkg: pkg, at: p.now()}
	p.mu.Unlock()
	return pkg, nil
}

// Prune drops cached packages no resolved version names. Runtime directories are hardlinked
// copies, so a live runner keeps its files even when its cached version goes. Errors are left for
// the next Prune: a package that could not be removed only costs disk space.
func (p *Packages) Prune(ctx context.Context) {
	p.mu.Lock()
	keep := map[string]bool{}
	for _, r := range p.resolved {
		keep[r.pkg.Key()] = true
	}
	p.mu.Unlock()
	_, _ = p.cache.Prune(ctx, func(key string) bool { return keep[key] })
}

// Platform spells this host's OS and architecture as GitHub's runner downloads do
// (actions-runner-<os>-<arch>-<version>: linux, osx, win; x64, arm64, arm, x86).
func Platform() (goos, arch string) {
	return platformOf(runtime.GOOS, runtime.GOARCH)
}

func platformOf(goos, arch string) (string, string) {
	goos = layoutFor(goos).githubOS
	switch arch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "x86"
	}
	return goos, arch
}
