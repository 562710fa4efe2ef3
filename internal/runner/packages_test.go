package runner

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Resolve asks GitHub once per version within ResolveTTL, again after it; "" means "latest".
func TestPackagesResolveRemembersForTTL(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := NewPackages(newTestCache(t, CacheOptions{}), func() time.Time { return now })
	var asked []string
	lookup := func(_ context.Context, goos, arch, version string) (Package, error) {
		asked = append(asked, version)
		return Package{Version: "2.319." + string(rune('0'+len(asked))), OS: goos, Arch: arch}, nil
	}
	ctx := context.Background()
	first, err := p.Resolve(ctx, "", lookup)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(ResolveTTL - time.Second)
	if again, _ := p.Resolve(ctx, "latest", lookup); again != first {
		t.Errorf("within the TTL: %+v, want the remembered %+v", again, first)
	}
	now = now.Add(time.Second)
	if later, _ := p.Resolve(ctx, "latest", lookup); later == first {
		t.Errorf("after the TTL the remembered answer was reused")
	}
	if _, err := p.Resolve(ctx, "2.300.0", lookup); err != nil {
		t.Fatal(err)
	}
	if want := []string{"latest", "latest", "2.300.0"}; !slices.Equal(asked, want) {
		t.Errorf("lookups %v, want %v", asked, want)
	}
	goos, arch := Platform()
	if first.OS != goos || first.Arch != arch {
		t.Errorf("looked up for %s/%s, want this host's %s/%s", first.OS, first.Arch, goos, arch)
	}
}

// A failed lookup is not remembered: the next Resolve asks again.
func TestPackagesResolveFailureIsNotRemembered(t *testing.T) {
	t.Parallel()
	p := NewPackages(newTestCache(t, CacheOptions{}), time.Now)
	calls := 0
	boom := errors.New("github is down")
	lookup := func(context.Context, string, string, string) (Package, error) {
		calls++
		if calls == 1 {
			return Package{}, boom
		}
		return Package{Version: "2.319.1"}, nil
	}
	if _, err := p.Resolve(context.Background(), "latest", lookup); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the lookup's", err)
	}
	if pkg, err := p.Resolve(context.Background(), "latest", lookup); err != nil || pkg.Version != "2.319.1" || calls != 2 {
		t.Fatalf("second resolve: %+v %v after %d lookups", pkg, err, calls)
	}
}

// Prune keeps exactly the packages some configured version resolves to.
func TestPackagesPruneKeepsResolvedVersions(t *testing.T) {
	t.Parallel()
	c, _, cur := cacheOfTwoVersions(t)
	ctx := context.Background()
	p := NewPackages(c, time.Now)
	if _, err := p.Resolve(ctx, "latest", func(context.Context, string, string, string) (Package, error) { return cur, nil }); err != nil {
		t.Fatal(err)
	}
	p.Prune(ctx)
	if got := cacheEntries(t, c); len(got) != 1 || got[0] != cur.Key() {
		t.Fatalf("cache holds %v, want only %s", got, cur.Key())
	}
}

func TestPlatformUsesGitHubSpelling(t *testing.T) {
	t.Parallel()
	goos, arch := Platform()
	if goos == "darwin" || arch == "amd64" || arch == "386" {
		t.Errorf("Platform() = %s/%s: Go's spelling, not GitHub's", goos, arch)
	}
}
