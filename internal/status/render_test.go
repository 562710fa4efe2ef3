package status

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var now = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

// fixture is a daemon with one healthy target, one in backoff, one erroring and one disabled.
func fixture() Snapshot {
	return Snapshot{
		Version: "0.3.1", PID: 4242, StartedAt: ago(26*time.Hour + 5*time.Minute), MaxRunners: 8,
		Config: Config{Generation: 3, Path: "/etc/runner-manager/config.toml",
			LastReload: Reload{OK: true, At: ago(5 * time.Minute)}},
		GitHubLastContact: ago(4 * time.Second),
		GitHubPolling:     &Polling{PointsPerMinute: 600, NeedPerMinute: 18, Stretch: 1, UsedPerMinute: 42},
		Targets: []Target{
			{Name: "web", Scope: "repo:acme/web", Mode: "autoscale", Enabled: true, Demand: 2, Owned: 4, Starting: 1, Busy: 2, Idle: 1, MaxRunners: 5, LastPass: ago(3 * time.Second),
				QueueLatency: &Latency{Jobs: 37, P50Seconds: 4.2, P95Seconds: 31.5}},
			{Name: "infra", Scope: "org:acme", Mode: "autoscale", Enabled: true, Demand: 1, MaxRunners: 2,
				Backoff:   Backoff{Active: true, Until: now.Add(90 * time.Second), Reason: "rate-limited"},
				LastError: "target acme: cannot list workflow runs: the GitHub API rate limit (core) is exhausted until 2026-12-02T14:01:30Z; runner-manager waits and resumes by itself"},
			{Name: "mobile", Scope: "repo:acme/mobile", Mode: "monitor", Enabled: true, MaxRunners: 1,
				LastError: "target acme/mobile: cannot list workflow runs: GitHub refused (403):\nthe App lacks the `actions: read` permission on acme/mobile"},
			{Name: "old", Scope: "repo:acme/old", Mode: "autoscale", Enabled: false, MaxRunners: 1},
			{Name: "legacy", Scope: "repo:acme/legacy", Mode: "autoscale", Enabled: true, Owned: 1, Busy: 1, MaxRunners: 2, Draining: true, LastPass: ago(10 * time.Second)},
		},
		Runners: []Runner{
			{ID: 31, Name: "rm-web-0003", Target: "web", State: "started", StartedAt: ago(40 * time.Second)},
			{ID: 17, Name: "rm-web-0001", Target: "web", State: "busy", StartedAt: ago(12*time.Minute + 3*time.Second), JobID: 289782451, JobName: "build (ubuntu)"},
			{ID: 18, Name: "rm-web-0002", Target: "web", State: "busy", StartedAt: ago(3*time.Minute + 20*time.Second), JobID: 289782460, JobName: "test"},
			{Name: "rm-infra-0001", Target: "infra", State: "planned"},
		},
		Events: []Event{
			{At: ago(20 * time.Minute), Target: "web", Attempt: "rm-web-0000", Kind: "failed", Message: "runner exited with status 1 before taking a job"},
			{At: ago(2 * time.Minute), Target: "infra", Kind: "backoff", Message: "rate limited until 14:01:30Z; next pass then"},
			{At: ago(10 * time.Second), Kind: "reload", Message: "config generation 3 applied: 1 changed"},
		},
	}
}

func reloadFailed() Snapshot {
	s := fixture()
	s.Config.LastReload = Reload{OK: false, At: ago(12 * time.Second), Error: []string{
		`/etc/runner-manager/config.toml:14:15: target "web": max_runners must be at least 1, got 0`,
		`/etc/runner-manager/config.toml:21:1: target "web" is defined twice (first at 9:1)`,
	}}
	s.Events = nil
	return s
}

func draining() Snapshot {
	s := fixture()
	s.Draining = "upgrade"
	s.Events = nil
	return s
}

// stretched is a host whose targets need more GitHub points than the governor's ceiling allows.
func stretched() Snapshot {
	s := fixture()
	s.GitHubPolling = &Polling{PointsPerMinute: 600, NeedPerMinute: 6000, Stretch: 13.9,
		Message: "1000 targets need 6000 points/min at poll_interval 30s; the ceiling is 600: polling every 6m57s instead"}
	s.Events = nil
	return s
}

// inFleet is a host sharing the ceiling with two others, and one that lost etcd.
func inFleet(hosts int) Snapshot {
	s := fixture()
	s.GitHubPolling.Fleet = &PollingFleet{Hosts: hosts, SharePerMinute: 600}
	if hosts > 0 {
		s.GitHubPolling.Fleet.SharePerMinute = 275
	}
	s.Events = nil
	return s
}

// twoAccounts is a host whose [github] targets fit its ceiling and whose [[account]] globex's do
// not, in a fleet: each account's plan and share is its own.
func twoAccounts() Snapshot {
	s := inFleet(3)
	s.GitHubPolling.UsedPerMinute = 57 // both accounts summed
	s.GitHubPollingByAccount = map[string]*Polling{
		"default": {PointsPerMinute: 600, NeedPerMinute: 18, Stretch: 1, UsedPerMinute: 42, Fleet: &PollingFleet{Hosts: 3, SharePerMinute: 275}},
		"globex": {PointsPerMinute: 60, NeedPerMinute: 240, Stretch: 4, UsedPerMinute: 15, Fleet: &PollingFleet{Hosts: 3, SharePerMinute: 20},
			Message: "2 targets need 240 points/min at poll_interval 1s; the ceiling is 60: polling every 4s instead"},
	}
	// globex's credential broke two hours ago while [github]'s answers keep the newest fresh.
	s.GitHubLastContactByAccount = map[string]time.Time{"default": s.GitHubLastContact, "globex": ago(2 * time.Hour)}
	return s
}

// threeAccounts is twoAccounts with an [[account]] initech that has never answered and has no
// poll plan (no enabled target), and globex never answered either.
func threeAccounts() Snapshot {
	s := twoAccounts()
	delete(s.GitHubLastContactByAccount, "globex")
	s.GitHubLastContactByAccount["initech"] = ago(3 * time.Minute)
	return s
}

// isolated is a host whose runners run in cgroups, or (cgroups false) one without usable cgroups.
func isolated(cgroups bool) Snapshot {
	s := fixture()
	s.Events = nil
	if cgroups {
		s.Isolation = &Isolation{Cgroups: true, CgroupRoot: "/sys/fs/cgroup/unified/runner-manager/runners"}
	} else {
		s.Isolation = &Isolation{NoCgroups: "no cgroup2 filesystem is mounted where this process's cgroup \"/\" can be reached"}
	}
	return s
}

func TestGoldenRenderings(t *testing.T) {
	checkRenderings(t, []rendering{
		{"status.txt", func(b *bytes.Buffer) error { return RenderStatus(b, fixture(), now) }},
		{"status-reload-failed.txt", func(b *bytes.Buffer) error { return RenderStatus(b, reloadFailed(), now) }},
		{"status-fresh.txt", func(b *bytes.Buffer) error {
			return RenderStatus(b, Snapshot{Version: "0.3.1", PID: 1, StartedAt: now, MaxRunners: 4, Config: Config{Path: "/etc/runner-manager/config.toml"}}, now)
		}},
		{"status-draining.txt", func(b *bytes.Buffer) error { return RenderStatus(b, draining(), now) }},
		{"status-stretched.txt", func(b *bytes.Buffer) error { return RenderStatus(b, stretched(), now) }},
		{"status-fleet.txt", func(b *bytes.Buffer) error { return RenderStatus(b, inFleet(3), now) }},
		{"status-fleet-degraded.txt", func(b *bytes.Buffer) error { return RenderStatus(b, inFleet(0), now) }},
		{"status-accounts.txt", func(b *bytes.Buffer) error { return RenderStatus(b, twoAccounts(), now) }},
		{"status-accounts.json", func(b *bytes.Buffer) error { return WriteJSON(b, twoAccounts()) }},
		{"status-accounts-contact.txt", func(b *bytes.Buffer) error { return RenderStatus(b, threeAccounts(), now) }},
		{"status-cgroups.txt", func(b *bytes.Buffer) error { return RenderStatus(b, isolated(true), now) }},
		{"status-no-cgroups.txt", func(b *bytes.Buffer) error { return RenderStatus(b, isolated(false), now) }},
		{"status.json", func(b *bytes.Buffer) error { return WriteJSON(b, fixture()) }},
		{"runners.txt", func(b *bytes.Buffer) error { return RenderRunners(b, fixture().Runners, now) }},
		{"runners-none.txt", func(b *bytes.Buffer) error { return RenderRunners(b, nil, now) }},
		{"runners.json", func(b *bytes.Buffer) error { return WriteJSON(b, RunnerList{Runners: fixture().Runners}) }},
	})
}

// rendering is one golden file and the call that renders it.
type rendering struct {
	golden string
	render func(*bytes.Buffer) error
}

// checkRenderings renders each case and compares it with its golden file.
func checkRenderings(t *testing.T, cases []rendering) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			var got bytes.Buffer
			if err := tc.render(&got); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, got.Bytes())
		})
	}
}

// checkGolden compares got with testdata/name; -update rewrites it.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got, *update)
}

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Minute, "0s"}, {59*time.Second + 900*time.Millisecond, "59s"}, {time.Minute, "1m"},
		{3*time.Minute + 20*time.Second, "3m20s"}, {12*time.Minute + 3*time.Second, "12m"},
		{time.Hour, "1h"}, {26*time.Hour + 5*time.Minute, "26h5m"}, {48 * time.Hour, "2d"}, {75 * time.Hour, "3d3h"},
	} {
		if got := age(now, now.Add(-tc.d)); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := age(now, time.Time{}); got != "-" {
		t.Errorf("age(zero) = %q, want -", got)
	}
}
