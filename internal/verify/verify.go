// Package verify checks, online, that every enabled target of a config can work: GitHub accepts
// the credential, the credential carries what the target needs, the target and its runner group
// (or scale set) exist and are visible, and the rate budget fits what the polls will spend. It is
// `runner-manager verify`.
//
// It owns the checks and their report. Every call to GitHub goes through internal/github (and
// internal/scaleset for a scale set's look-up); verify reads only and never registers a runner.
package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
)

// GitHub is what verify asks GitHub through (*github.Client).
type GitHub interface {
	Access(ctx context.Context, s github.Scope) (github.Access, error)
	ListRunners(ctx context.Context, s github.Scope) ([]github.Runner, error)
	Repositories(ctx context.Context, s github.Scope) ([]github.Scope, error)
	ProbeRuns(ctx context.Context, s github.Scope) error
	RunnerGroupInfo(ctx context.Context, s github.Scope, name string) (github.RunnerGroup, error)
	RepoCount(org string) (int, bool)
	Credential() string
}

// ScaleSets finds a scale-set target's set in the Actions service; found is false when the
// daemon would create it.
type ScaleSets interface {
	Find(ctx context.Context, t config.Target) (id int64, found bool, err error)
}

// Status is a check's outcome.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, but the operator should know (a budget nearly spent, a stretched poll)
	Fail Status = "fail"
)

// Problem classes a failed check for the exit code (docs/exit-codes.md).
type Problem string

const (
	ProblemCredential  Problem = "credential"  // GitHub rejected the credential
	ProblemAccess      Problem = "access"      // a permission, scope, repository or runner group is missing
	ProblemUnavailable Problem = "unavailable" // GitHub could not be reached, failed or is rate limiting: try again
)

// Check is one line of a target's report.
type Check struct {
	Name    string  `json:"name"`
	Status  Status  `json:"status"`
	Detail  string  `json:"detail"`
	Problem Problem `json:"problem,omitempty"`
}

// Target is one target's report.
type Target struct {
	Name       string  `json:"name"`
	Account    string  `json:"account,omitempty"` // its [[account]]; absent for [github]
	Scope      string  `json:"scope"`             // "acme/api" or "acme"
	Credential string  `json:"credential"`
	Checks     []Check `json:"checks"`
	// Repositories is an organization's repository count as the credential sees it.
	Repositories *int `json:"repositories,omitempty"`
	// RequestsPerMinute is what the target's idle polls are projected to cost at its planned
	// interval (every request a pass makes; a 304 costs as much as a 200).
	RequestsPerMinute float64 `json:"requests_per_minute"`
	// Rate is the credential's core budget as GitHub reported it for this target's owner.
	Rate *Rate `json:"rate,omitempty"`
}

// Rate is GitHub's core rate budget for a credential.
type Rate struct {
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	Reset     time.Time `json:"reset"`
}

// Plan is the poll plan of every target together under the request governor's ceiling.
type Plan struct {
	Ceiling int    `json:"ceiling_points_per_minute"`
	Need    int    `json:"need_points_per_minute"`
	Message string `json:"stretched,omitempty"`
}

// Report is the whole answer.
type Report struct {
	Targets  []Target `json:"targets"`
	Skipped  []string `json:"disabled_targets,omitempty"`
	Plan     Plan     `json:"plan"`
	Warnings []string `json:"warnings,omitempty"`
	// AccountPlans are the poll plans of the [[account]]s, each under its own ceiling (Plan is
	// [github]'s, or the first account's when no target uses [github]).
	AccountPlans map[string]Plan `json:"account_plans,omitempty"`
}

// Worst is the most serious problem of the report: ProblemCredential before ProblemAccess (a
// definite answer) before ProblemUnavailable (try again); "" when every check passed or warned.
func (r Report) Worst() Problem {
	rank := map[Problem]int{ProblemUnavailable: 1, ProblemAccess: 2, ProblemCredential: 3}
	var worst Problem
	for _, t := range r.Targets {
		for _, c := range t.Checks {
			if c.Status == Fail && rank[c.Problem] > rank[worst] {
				worst = c.Problem
			}
		}
	}
	return worst
}

// Options are what Run needs besides the config.
type Options struct {
	GitHub    GitHub
	ScaleSets ScaleSets // nil: scale sets are not looked up
	Kind      config.AuthKind
}

// Run verifies every enabled target of cfg, one after another.
func Run(ctx context.Context, cfg *config.Config, o Options) Report {
	var r Report
	for _, t := range cfg.Targets {
		if !t.IsEnabled() {
			r.Skipped = append(r.Skipped, t.Name)
		}
	}
	for _, t := range cfg.EnabledTargets() {
		r.Targets = append(r.Targets, verifyTarget(ctx, cfg, t, o))
	}
	plan := github.PlanConfig(cfg, func(t config.Target) time.Duration { return engine.PollInterval(cfg, t) }, o.GitHub.RepoCount)
	r.Plan = Plan{Ceiling: plan.Ceiling, Need: plan.Need, Message: plan.Message}
	if plan.Message != "" {
		r.Warnings = append(r.Warnings, "polls stretch: "+plan.Message)
	}
	for i, t := range r.Targets {
		if tc, ok := cfg.Target(t.Name); ok {
			r.Targets[i].RequestsPerMinute = perMinute(cfg, tc, plan, o.GitHub)
		}
	}
	r.Warnings = append(r.Warnings, budgetWarnings(r)...)
	return r
}

// perMinute is a target's projected idle cost at its planned interval.
func perMinute(cfg *config.Config, t config.Target, plan github.PollPlan, gh GitHub) float64 {
	if t.ScaleSet != "" {
		return 0
	}
	pts := github.PassPoints(false, 1)
	switch {
	case t.Enterprise != "":
		pts = 1 // the runner list: its jobs come from webhooks (github.PlanConfig)
	case t.Organization != "":
		n, ok := gh.RepoCount(t.Organization)
		if !ok {
			n = 1
		}
		pts = github.PassPoints(true, n)
	}
	iv := plan.Interval(t.Name, engine.PollInterval(cfg, t))
	return math.Round(float64(pts)*float64(time.Minute)/float64(iv)*10) / 10
}

// budgetWarnings compares each credential's hourly budget with what the polls spend of it.
func budgetWarnings(r Report) []string {
	var need float64
	var rate *Rate
	for _, t := range r.Targets {
		need += t.RequestsPerMinute
		if t.Rate != nil && (rate == nil || t.Rate.Limit < rate.Limit) {
			rate = t.Rate
		}
	}
	if rate == nil || rate.Limit == 0 || need*60 <= float64(rate.Limit) {
		return nil
	}
	return []string{fmt.Sprintf("idle polls are projected at %.0f requests/hour, more than the credential's budget of %d/hour: raise poll_interval, use webhooks, or split the targets between accounts ([[account]], each with its own credential)", need*60, rate.Limit)}
}

func verifyTarget(ctx context.Context, cfg *config.Config, t config.Target, o Options) Target {
	s, err := github.ScopeOf(t)
	out := Target{Name: t.Name, Scope: s.String(), Credential: o.GitHub.Credential()}
	add := func(name string, st Status, detail string, p Problem) {
		out.Checks = append(out.Checks, Check{Name: name, Status: st, Detail: detail, Problem: p})
	}
	failed := func(name string, err error) {
		add(name, Fail, err.Error(), classify(err))
	}
	if err != nil {
		add("target", Fail, err.Error(), ProblemAccess)
		return out
	}

	acc, err := o.GitHub.Access(ctx, s)
	if err != nil {
		failed("credential", err)
		return out // nothing else can be asked with a credential GitHub does not accept
	}
	out.Rate = &Rate{Limit: acc.Limit, Remaining: acc.Remaining, Reset: acc.Reset}
	classic := acc.ScopesSent && o.Kind == config.AuthTokenFile
	add("credential", OK, "accepted: "+credentialKind(o.Kind, acc, classic), "")
	permissions(&out, o.Kind, classic, acc, s)

	runners, err := o.GitHub.ListRunners(ctx, s)
	if err != nil {
		failed("target", err)
	} else {
		add("target", OK, fmt.Sprintf("%s is visible; %d runners registered there", s, len(runners)), "")
	}

	probe := s
	if s.IsOrg() {
		repos, err := o.GitHub.Repositories(ctx, s)
		switch {
		case err != nil:
			failed("repositories", err)
		case len(repos) == 0:
			n := 0
			out.Repositories = &n
			add("repositories", Fail, fmt.Sprintf("%s sees no repository of %s, so no job can be seen: grant it access to the repositories", o.GitHub.Credential(), s), ProblemAccess)
		default:
			n := len(repos)
			out.Repositories = &n
			probe = repos[0]
			add("repositories", OK, fmt.Sprintf("%d repositories visible (archived ones are not polled)", n), "")
		}
	}
	if !probe.IsOrg() && !probe.IsEnterprise() { // an enterprise's jobs are never read: no probe
		if err := o.GitHub.ProbeRuns(ctx, probe); err != nil {
			failed("workflow runs", err)
		} else {
			add("workflow runs", OK, "readable in "+probe.String(), "")
		}
	}

	groupCheck(ctx, &out, t, s, o)
	rateCheck(&out, acc)
	return out
}

func credentialKind(kind config.AuthKind, acc github.Access, classic bool) string {
	switch {
	case acc.Permissions != nil:
		return "a GitHub App installation"
	case kind == config.AuthDeviceFlow:
		return "the device-flow sign-in"
	case classic:
		return "a classic token with scopes " + orNone(strings.Join(acc.Scopes, ", "))
	default:
		return "a fine-grained token (GitHub lists no permissions for it; read access is probed below)"
	}
}

// permissions checks what GitHub lists: an App installation's permissions, a classic token's
// scopes. A fine-grained token or a sign-in lists nothing; the read probes that follow stand in,
// and write access (registering a runner) is proven only by the daemon's first launch.
func permissions(out *Target, kind config.AuthKind, classic bool, acc github.Access, s github.Scope) {
	needs := github.Needs(kind, classic, s)
	var missing []string
	switch {
	case s.IsEnterprise() && !classic:
		enterprisePermissions(out, kind, acc)
		return
	case acc.Permissions != nil:
		for _, n := range needs {
			if !n.GrantedBy(acc.Permissions) {
				missing = append(missing, fmt.Sprintf("`%s: %s` (to %s)", n.Name, n.Level, n.For))
			}
		}
		if len(missing) > 0 {
			out.Checks = append(out.Checks, Check{Name: "permissions", Status: Fail, Problem: ProblemAccess,
				Detail: "the App installation lacks " + strings.Join(missing, ", ") + ": add them in the App's settings, then accept the new permissions on the installation"})
			return
		}
	case classic:
		for _, n := range needs {
			if !n.CoveredBy(acc.Scopes) {
				missing = append(missing, fmt.Sprintf("`%s` (to %s)", n.Name, n.For))
			}
		}
		if len(missing) > 0 {
			out.Checks = append(out.Checks, Check{Name: "permissions", Status: Fail, Problem: ProblemAccess,
				Detail: "the token lacks the scope " + strings.Join(missing, ", ") + ": create a token with them and write it to the account's token_file"})
			return
		}
	default:
		out.Checks = append(out.Checks, Check{Name: "permissions", Status: OK,
			Detail: "not listed by GitHub for this credential; needs " + describe(needs) + " (reads are probed below; a write is proven by the first launch)"})
		return
	}
	out.Checks = append(out.Checks, Check{Name: "permissions", Status: OK, Detail: "has all it needs: " + describe(needs)})
}

func describe(needs []github.Need) string {
	parts := make([]string, 0, len(needs))
	for _, n := range needs {
		if n.Level != "" {
			parts = append(parts, n.Name+": "+n.Level)
		} else {
			parts = append(parts, n.Name)
		}
	}
	return strings.Join(parts, ", ")
}

// groupCheck: the runner group the target's runners join exists and is visible to the credential,
// and (visibility "selected") serves some repository; a scale set is looked up in its group.
func groupCheck(ctx context.Context, out *Target, t config.Target, s github.Scope, o Options) {
	g, err := o.GitHub.RunnerGroupInfo(ctx, s, t.RunnerGroup)
	add := func(st Status, detail string, p Problem) {
		out.Checks = append(out.Checks, Check{Name: "runner group", Status: st, Detail: detail, Problem: p})
	}
	switch {
	case err != nil:
		add(Fail, err.Error(), classify(err))
		return
	case g.Visibility == "selected" && len(g.Repos) == 0:
		add(Fail, fmt.Sprintf("%q (id %d) serves no repository (visibility: selected, none selected): its runners would take no job; add the repositories to the group, or set its visibility to all", g.Name, g.ID), ProblemAccess)
		return
	case g.Visibility == "selected" && s.IsOrg():
		// The daemon counts every repository's jobs as demand, but only these reach the group's runners.
		add(Warn, fmt.Sprintf("%q (id %d) serves only %s: %s; jobs of the organization's other repositories never reach its runners, which would start for them and idle", g.Name, g.ID, plural(len(g.Repos), "selected repository", "selected repositories"), strings.Join(g.Repos, ", ")), "")
	default:
		add(OK, fmt.Sprintf("%q (id %d), visibility %s", g.Name, g.ID, orNone(g.Visibility)), "")
	}
	if t.ScaleSet == "" || o.ScaleSets == nil {
		return
	}
	id, found, err := o.ScaleSets.Find(ctx, t)
	switch {
	case err != nil:
		out.Checks = append(out.Checks, Check{Name: "scale set", Status: Fail, Detail: err.Error(), Problem: classify(err)})
	case found:
		out.Checks = append(out.Checks, Check{Name: "scale set", Status: OK, Detail: fmt.Sprintf("%q exists (id %d)", t.ScaleSet, id)})
	default:
		out.Checks = append(out.Checks, Check{Name: "scale set", Status: OK, Detail: fmt.Sprintf("%q does not exist yet: the daemon creates it when it starts", t.ScaleSet)})
	}
}

// lowBudget is the share of the hourly budget under which verify warns.
const lowBudget = 0.1

func rateCheck(out *Target, acc github.Access) {
	detail := fmt.Sprintf("%d of %d requests left until %s", acc.Remaining, acc.Limit, acc.Reset.UTC().Format(time.RFC3339))
	st := OK
	if acc.Limit > 0 && float64(acc.Remaining) < lowBudget*float64(acc.Limit) {
		st = Warn
		detail += ": nearly spent; the daemon waits for the reset when it runs out"
	}
	out.Checks = append(out.Checks, Check{Name: "rate budget", Status: st, Detail: detail})
}

// classify maps a failed call to the problem class of the exit code.
func classify(err error) Problem {
	switch {
	case github.IsUnauthorized(err):
		return ProblemCredential
	case github.IsRetryable(err), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ProblemUnavailable
	}
	return ProblemAccess
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
