// Package doctor checks a host before it is trusted with jobs and says, for each finding, what to
// do (docs/operations.md, "doctor"). It owns the list of checks and the safe repairs of --fix
// (modes, missing slot users); every rule it applies belongs to the package that enforces it
// (config.CheckSecretFile, selfupdate.CheckSource, internal/service, internal/verify,
// internal/heartbeat), so doctor can never pass what the daemon refuses. It never changes
// ownership, never deletes and never follows a link it repairs.
package doctor

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// Status is a finding's outcome.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, but the operator should know
	Fail Status = "fail" // the host should not run jobs until this is fixed
	Skip Status = "skip" // not checked here; Detail says why
)

// Finding is one line of the report.
type Finding struct {
	Check   string `json:"check"`
	Subject string `json:"subject,omitempty"` // the path, user or target the finding is about
	Status  Status `json:"status"`
	Detail  string `json:"detail"`
	Do      string `json:"do,omitempty"`    // what the operator should do
	Fixed   string `json:"fixed,omitempty"` // what --fix changed
	// Problem classes an online failure for the exit code as verify does (docs/exit-codes.md).
	Problem verify.Problem `json:"problem,omitempty"`
}

// Report is everything doctor found.
type Report struct {
	Findings []Finding `json:"findings"`
}

// Count is the number of findings with status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, f := range r.Findings {
		if f.Status == s {
			n++
		}
	}
	return n
}

// Worst is the most serious failure: a credential GitHub refused or that cannot be read (nothing
// works without it), then a failed check of the host ("" problem), then the online classes as
// verify ranks them (access, then unavailable). failed is false when nothing failed.
func (r Report) Worst() (p verify.Problem, failed bool) {
	rank := map[verify.Problem]int{verify.ProblemUnavailable: 1, verify.ProblemAccess: 2, "": 3, verify.ProblemCredential: 4}
	for _, f := range r.Findings {
		if f.Status == Fail && (!failed || rank[f.Problem] > rank[p]) {
			p, failed = f.Problem, true
		}
	}
	return p, failed
}

// UserDB looks up the host's accounts; under --root, the tree's etc/passwd.
type UserDB interface {
	Lookup(name string) (Account, error) // an error wrapping fs.ErrNotExist when there is none
}

// Account is a local user as doctor needs it.
type Account struct {
	Name string
	UID  int
	Home string // as the host sees it (unprefixed)
}

// Online is the GitHub side of the checks: internal/verify's report for the config's targets and
// the Date header of GitHub's last answer (zero when none came).
type Online func(ctx context.Context) (verify.Report, time.Time, error)

// Env is what the checks read the host through; tests give fakes.
type Env struct {
	Root       string         // "" is the host; else a tree whose paths are prefixed (files only)
	ConfigPath string         // as the host sees it
	Config     *config.Config // nil when it could not be loaded (ConfigErr says why)
	ConfigErr  error
	EUID       int
	Now        func() time.Time
	Fix        bool // repair what is safe (modes, missing slot users) and report it

	Users UserDB
	// CreateUsers makes the slot users of slots 0..n-1 that are missing (runner.SlotUsers.Provision);
	// nil when they cannot be made here (--root, not root): the finding says so.
	CreateUsers func(ctx context.Context, n int) ([]string, error)
	// FreeBytes is the space left to unprivileged users on path's filesystem.
	FreeBytes func(path string) (uint64, error)
	// Cgroups says where the runners' cgroups go, or why there are none (see cgroups.go).
	Cgroups func() (string, error)
	// Service is `service status`: the install, the service manager's and the daemon's view.
	Service func(ctx context.Context) service.Status
	Paths   service.Paths
	Online  Online // nil: online checks skipped; OfflineWhy says why
	// OfflineWhy is shown when Online is nil ("--offline", "no usable credential: ...").
	OfflineWhy string
	// OfflineProblem classes a skipped online check that is a failure (no credential): "" skips.
	OfflineProblem verify.Problem
}

// check is one check: it appends its findings.
type check func(ctx context.Context, e *Env) []Finding

// checks run in this order, which is the table's.
var checks = []check{
	checkConfig,
	checkSecretFiles,
	checkStateDirs,
	checkSlotUsers,
	checkCgroups,
	checkDocker,
	checkFreeDisk,
	checkUnit,
	checkService,
	checkHeartbeat,
	checkUpgradeSource,
	checkOnline,
}

// Run runs every check.
func Run(ctx context.Context, e *Env) Report {
	var r Report
	for _, c := range checks {
		r.Findings = append(r.Findings, c(ctx, e)...)
	}
	return r
}

// onDisk is where host path p is under Root. A path already in the tree is kept: the loader
// makes a credential path relative to the config file absolute against the file's on-disk path.
func (e *Env) onDisk(p string) string {
	if e.Root == "" {
		return p
	}
	if rel, err := filepath.Rel(e.Root, p); err == nil && filepath.IsLocal(rel) {
		return p
	}
	return filepath.Join(e.Root, p)
}

// shown is a message with Root's prefix removed, so it names the paths the host will see.
func (e *Env) shown(s string) string {
	if e.Root == "" {
		return s
	}
	return strings.ReplaceAll(s, e.Root, "")
}

// daemon is the config's [daemon], or its defaults when the config could not be loaded.
func (e *Env) daemon() config.Daemon {
	if e.Config != nil {
		return e.Config.Daemon
	}
	return config.Daemon{StateDir: config.DefaultStateDir, MaxRunners: config.DefaultMaxRunners, RunnerUserPrefix: config.DefaultRunnerUserPrefix,
		MinFreeDisk: config.DefaultMinFreeDisk}
}

// lstat is p's own file info (a link is not followed); a missing path gives ok false and no error.
func lstat(p string) (fs.FileInfo, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return fi, true, nil
}
