package verify

import (
	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
)

// enterprisePermissions judges a credential on an enterprise target that is not a classic token:
// GitHub's enterprise runner endpoints take a classic token (or an OAuth app's user token) with
// manage_runners:enterprise or admin:enterprise, and no GitHub App or fine-grained token
// (docs/github.md, "Enterprise targets").
func enterprisePermissions(out *Target, kind config.AuthKind, acc github.Access) {
	check := Check{Name: "permissions", Status: Fail, Problem: ProblemAccess}
	switch {
	case acc.Permissions != nil || kind == config.AuthApp: // config.Validate refuses it; a Config built by hand
		check.Detail = "GitHub Apps cannot manage enterprise runners (the enterprise endpoints take no App token): give this target an [[account]] with a classic token carrying manage_runners:enterprise, held by an enterprise owner"
	case kind == config.AuthDeviceFlow:
		check.Status, check.Problem = OK, ""
		check.Detail = "not listed by GitHub for a sign-in; needs an OAuth app's sign-in by an enterprise owner with the manage_runners:enterprise scope (a GitHub App's sign-in cannot manage enterprise runners); the runner list below proves it"
	default:
		check.Detail = "fine-grained tokens cannot manage enterprise runners: use a classic token with manage_runners:enterprise, held by an enterprise owner"
	}
	out.Checks = append(out.Checks, check)
}

// Merge adds the report of account name (verified with that account's own client, over
// config.ForAccount) to r: its targets, marked with the account, its plan and its warnings.
func (r *Report) Merge(name string, o Report) {
	first := len(r.Targets) == 0 && r.Plan == (Plan{})
	for _, t := range o.Targets {
		if name != config.DefaultAccount {
			t.Account = name
		}
		r.Targets = append(r.Targets, t)
	}
	if first && name == config.DefaultAccount {
		r.Plan = o.Plan
		r.Warnings = append(r.Warnings, o.Warnings...)
		return
	}
	if r.AccountPlans == nil {
		r.AccountPlans = map[string]Plan{}
	}
	r.AccountPlans[name] = o.Plan
	for _, w := range o.Warnings {
		r.Warnings = append(r.Warnings, "account "+name+": "+w)
	}
}
