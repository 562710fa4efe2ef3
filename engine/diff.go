package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"sort"
	"strings"

	"github.com/runner-manager/runner-manager/config"
)

// Report says what an Apply changed. Names are target names; a rename is one Removed plus one Added.
type Report struct {
	Generation int64          `json:"generation"`
	Added      []string       `json:"added,omitempty"`     // new or newly enabled: loop started
	Removed    []string       `json:"removed,omitempty"`   // gone from the file: loop drains
	Disabled   []string       `json:"disabled,omitempty"`  // enabled = false: loop drains
	Restarted  []string       `json:"restarted,omitempty"` // identity (config.Target.Identity) changed
	Changed    []TargetChange `json:"changed,omitempty"`   // updated in place, next pass
	Unchanged  []string       `json:"unchanged,omitempty"`
	Daemon     []string       `json:"daemon,omitempty"`   // changed [daemon] keys, e.g. "max_runners"
	Sections   []string       `json:"sections,omitempty"` // other changed sections: "github", "webhook", "fleet"
}

// TargetChange lists the changed keys of one target, by their name in the file.
type TargetChange struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
	// Replace is true when the change alters how runners are registered or launched (labels,
	// runner_group, runner_version, env): idle runners are replaced, busy ones finish.
	Replace bool `json:"replace,omitempty"`
}

// NoOp reports whether the Apply changed nothing at all.
func (r Report) NoOp() bool {
	return len(r.Added)+len(r.Removed)+len(r.Disabled)+len(r.Restarted)+len(r.Changed)+len(r.Daemon)+len(r.Sections) == 0
}

// replaceFields are the keys folded into the policy fingerprint (see fingerprint).
var replaceFields = map[string]bool{"labels": true, "runner_group": true, "runner_version": true, "env": true}

// diff compares two snapshots by target name. old may be nil (first Apply). Which keys changed is
// config.Diff's answer (config owns reload semantics); diff only sorts them into what the
// supervisor does with each target's loop.
func diff(old, cur *config.Config) Report {
	var r Report
	changes := config.Diff(old, cur)
	oldT := enabledTargets(old)
	if old != nil {
		for _, c := range changes {
			if c.Target != "" {
				continue
			}
			// The engine does not act on other sections; the daemon rebuilds its GitHub client.
			section, key, _ := strings.Cut(c.Key, ".")
			switch {
			case section == "daemon":
				r.Daemon = append(r.Daemon, key)
			case !slices.Contains(r.Sections, section):
				r.Sections = append(r.Sections, section)
			}
		}
	}
	newT := enabledTargets(cur)
	for name, t := range newT {
		was, ok := oldT[name]
		if !ok {
			r.Added = append(r.Added, name)
			continue
		}
		fields := slices.DeleteFunc(changes.Target(name), func(f string) bool { return f == "enabled" })
		switch {
		// The supervisor keys loops by Identity, so a changed identity restarts the loop: the
		// report asks the same question rather than keeping its own list of identity keys.
		case was.Identity() != t.Identity():
			r.Restarted = append(r.Restarted, name)
		case len(fields) == 0:
			r.Unchanged = append(r.Unchanged, name)
		default:
			r.Changed = append(r.Changed, TargetChange{Name: name, Fields: fields,
				Replace: slices.ContainsFunc(fields, func(f string) bool { return replaceFields[f] })})
		}
	}
	for name := range oldT {
		if _, ok := newT[name]; ok {
			continue
		}
		if slices.ContainsFunc(cur.Targets, func(t config.Target) bool { return t.Name == name }) {
			r.Disabled = append(r.Disabled, name)
		} else {
			r.Removed = append(r.Removed, name)
		}
	}
	for _, s := range [][]string{r.Added, r.Removed, r.Disabled, r.Restarted, r.Unchanged} {
		sort.Strings(s)
	}
	sort.Slice(r.Changed, func(i, j int) bool { return r.Changed[i].Name < r.Changed[j].Name })
	return r
}

func enabledTargets(c *config.Config) map[string]config.Target {
	out := map[string]config.Target{}
	if c == nil {
		return out
	}
	for _, t := range c.Targets {
		if t.IsEnabled() {
			out[t.Name] = t
		}
	}
	return out
}

// fingerprint is the attempt's journal Policy: "<identity> <hash>". The identity stays readable so
// a loop can tell its attempts from those registered under a target's previous identity, and so
// recovery can deregister them there even after the file changed; the hash covers the launch
// policy whose change replaces idle runners (labels as a set, runner group, version, env).
//
// With a key (Options.PolicyKey, per host) the hash is an HMAC-SHA256 ("<identity> h1:<32 hex>"):
// the journal holds env values only through it, and without the host's key a copied journal
// cannot be used to guess them offline. Without a key it is the unsalted 64-bit form earlier
// versions wrote; a loop still accepts that form (policies), so an upgrade replaces no idle runner.
func fingerprint(t config.Target) string { return fingerprintWith(nil, t) }

func fingerprintWith(key []byte, t config.Target) string {
	if len(key) == 0 {
		h := sha256.New()
		writePolicy(h, t)
		return t.Identity() + " " + hex.EncodeToString(h.Sum(nil))[:16]
	}
	m := hmac.New(sha256.New, key)
	writePolicy(m, t)
	return t.Identity() + " h1:" + hex.EncodeToString(m.Sum(nil))[:32]
}

// policies are the fingerprints under which an attempt of t is current: the keyed one this
// version writes, and the unsalted one a previous version wrote.
type policies struct{ current, legacy string }

func policiesFor(key []byte, t config.Target) policies {
	return policies{current: fingerprintWith(key, t), legacy: fingerprint(t)}
}

// matches reports whether an attempt launched under policy p runs t's current launch policy.
func (ps policies) matches(p string) bool { return p == ps.current || p == ps.legacy }

func writePolicy(h hash.Hash, t config.Target) {
	labels := slices.Clone(t.Labels)
	sort.Strings(labels)
	h.Write([]byte(strings.Join(labels, "\x00")))
	h.Write([]byte{1})
	h.Write([]byte(t.RunnerGroup))
	h.Write([]byte{1})
	h.Write([]byte(t.RunnerVersion))
	keys := make([]string, 0, len(t.Env))
	for k := range t.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte{1})
		h.Write([]byte(k + "=" + t.Env[k]))
	}
}

// policyIdentity extracts the identity from a fingerprint ("" for a foreign format).
func policyIdentity(policy string) string {
	id, _, _ := strings.Cut(policy, " ")
	return id
}

// targetForIdentity rebuilds the registrar-facing part of a target from a stored identity, so
// attempts of a removed or re-pointed target can still be deregistered where they were registered.
func targetForIdentity(name, identity string) config.Target {
	t := config.Target{Name: name}
	identity, t.ScaleSet, _ = strings.Cut(identity, config.ScaleSetIdentity)
	if repo, ok := strings.CutPrefix(identity, "repo:"); ok {
		t.Repository = repo
	} else {
		t.Organization = strings.TrimPrefix(identity, "org:")
	}
	return t
}
