package daemon

import (
	"fmt"
	"github.com/runner-manager/runner-manager/internal/scalesetdemand"
	"maps"
	"strings"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
)

// Several accounts: the root gitHub serves the [github] account and keeps one gitHub per
// [[account]] (others), each building its own client, so each account has its own credential and
// its own request governor (its points_per_minute and max_concurrent_requests). The engine only
// ever calls the root; scoped routes each call to the target's account.

// setAccounts records the config's [[account]]s: a new one gets its own gitHub (its client built
// on first use, under the fleet's share of its ceiling), a changed one drops its client, a
// removed one is forgotten (validate refuses a file whose targets still name it).
func (g *gitHub) setAccounts(accts []config.Account) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := make(map[string]*gitHub, len(accts))
	for _, a := range accts {
		sub := g.others[a.Name]
		if sub == nil {
			sub = &gitHub{build: g.build, name: a.Name, cfg: a.GitHub, share: accountShare(g.share, a.Name)}
		}
		sub.setSection(a.GitHub)
		next[a.Name] = sub
	}
	g.others = next
}

// forTarget is the gitHub of t's account: g for [github], else its [[account]]'s.
func (g *gitHub) forTarget(t config.Target) (*gitHub, error) {
	if t.AccountName() == config.DefaultAccount {
		return g, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.others[t.Account]; a != nil {
		return a, nil
	}
	return nil, &terminalError{err: fmt.Errorf("target %s: account %q is not configured: add an [[account]] called %q, or remove the target's account key to use [github]", t.Name, t.Account, t.Account)}
}

// checkAccounts builds the client of every account an enabled target of cfg uses, so a start
// fails at once, naming the account, when one cannot authenticate; an account no target uses
// needs no credential yet.
func (g *gitHub) checkAccounts(cfg *config.Config) error {
	seen := map[string]bool{}
	for _, t := range cfg.EnabledTargets() {
		name, _, _ := cfg.AccountOf(t)
		if seen[name] {
			continue
		}
		seen[name] = true
		a, err := g.forTarget(t)
		if err == nil {
			_, err = a.get()
		}
		if err != nil && name != config.DefaultAccount {
			return fmt.Errorf("account %q: %w", name, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// account is the gitHub of the account called name: g for [github], an [[account]]'s, or an
// empty one (no client) for a name no longer configured.
func (g *gitHub) account(name string) *gitHub {
	if name == config.DefaultAccount {
		return g
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.others[name]; a != nil {
		return a
	}
	return &gitHub{name: name}
}

func (g *gitHub) othersLocked() map[string]*gitHub { return maps.Clone(g.others) }

// perAccount is one's figure for this account and each [[account]], by account name.
func (g *gitHub) perAccount(one func(*gitHub) int) map[string]int {
	out := map[string]int{g.name: one(g)}
	g.mu.Lock()
	others := g.othersLocked()
	g.mu.Unlock()
	for name, a := range others {
		out[name] = one(a)
	}
	return out
}

// accountSep joins an [[account]]'s name and its governor's own key in what a fleet host
// publishes: the [github] account's keys stay as they were, so hosts of an older version still
// share its ceiling with this one; no login contains it.
const accountSep = ":"

// othersSpend adds the [[account]]s' spend to out, keyed "<name>:<key>".
func (g *gitHub) othersSpend(out map[string]github.Spend) map[string]github.Spend {
	g.mu.Lock()
	others := g.othersLocked()
	g.mu.Unlock()
	for name, a := range others {
		for k, sp := range a.Spend() {
			if out == nil {
				out = map[string]github.Spend{}
			}
			out[name+accountSep+k] = sp
		}
	}
	return out
}

// accountShare is the part of fs that concerns the [[account]] name: the other hosts' spend of
// its keys, without the prefix. nil stays nil (no fleet: the whole ceiling).
func accountShare(fs *github.FleetShare, name string) *github.FleetShare {
	if fs == nil {
		return nil
	}
	out := &github.FleetShare{Hosts: fs.Hosts, Others: map[string][]github.Spend{}}
	for k, sp := range fs.Others {
		if key, ok := strings.CutPrefix(k, name+accountSep); ok {
			out.Others[key] = sp
		}
	}
	return out
}

// errWebhookOnly is an enterprise target's answer to a poll: GitHub lists no queued jobs for an
// enterprise, so its webhook deliveries are its demand. Partial keeps the engine from taking the
// empty answer for "nothing queued" (which would forget what deliveries said).
var errWebhookOnly = webhookOnly{}

type webhookOnly struct{}

func (webhookOnly) Error() string {
	return "enterprise target: GitHub lists no queued jobs for an enterprise, so its demand is its workflow_job webhook deliveries; a delivery that never arrives is a job it does not see until GitHub redelivers it"
}

func (webhookOnly) Partial() bool { return true }

// scaleSetAccount is what t's scale set needs of its account: the api_url in force and its
// registration tokens.
func (g *gitHub) scaleSetAccount(t config.Target) (scalesetdemand.Account, error) {
	a, err := g.forTarget(t)
	if err != nil {
		return scalesetdemand.Account{}, err
	}
	return scalesetdemand.Account{APIURL: a.apiURL(), Tokens: tokens{a}}, nil
}
