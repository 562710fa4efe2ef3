package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Class says when a change of a key takes effect. config owns this knowledge: the engine and the
// daemon ask Diff instead of keeping lists of their own (TestEveryKeyHasAClass walks Config).
type Class string

// The three classes.
const (
	// Live keys take effect when the reload is applied (log_level; a target added or disabled).
	Live Class = "live"
	// NextPass keys are read by a target's loop at its next pass (max_runners, labels).
	NextPass Class = "next pass"
	// Restart keys need a daemon restart; a reload that changes one is rejected whole.
	Restart Class = "restart"
)

// classes maps every key's schema path (list entries without their index: "target.labels") to its
// class. Whole targets ("target") are Live: Apply starts or drains their loop at once.
var classes = map[string]Class{
	"daemon.state_dir":              Restart, // the journal, the lock and the status socket live there
	"daemon.log_level":              Live,
	"daemon.log_format":             Live,
	"daemon.max_runners":            NextPass, // the host bound each loop's plan reads
	"daemon.poll_interval":          NextPass,
	"daemon.idle_poll_interval":     NextPass,
	"daemon.shutdown_drain_timeout": Live,     // read when a stop begins
	"daemon.reload_settle":          Live,     // read by the watcher at its next change
	"daemon.max_job_duration":       NextPass, // the default of target.max_job_duration
	"daemon.metrics_listen":         Restart,
	"daemon.status_listen":          Restart,
	"daemon.status_token_file":      Restart, // the file is re-read live; another path needs a restart
	"daemon.runner_user":            Restart, // resolved once, when the launcher is built
	"daemon.runner_user_prefix":     Restart,
	"daemon.memory_max":             NextPass, // written into the cgroups of runners launched after the change
	"daemon.cpus":                   NextPass,
	"daemon.pids_max":               NextPass,
	"daemon.min_free_disk":          NextPass, // checked before each launch
	"daemon.executor":               NextPass, // the default of target.executor
	"daemon.docker_host":            Restart,  // the Docker client is built once, at start

	"github.api_url":                 Live, // the GitHub client is rebuilt when the reload is applied
	"github.token_file":              Live,
	"github.app_id":                  Live,
	"github.app_client_id":           Live,
	"github.installation_id":         Live,
	"github.private_key_file":        Live,
	"github.device_flow.client_id":   Live,
	"github.points_per_minute":       Live, // a new client gets a new governor; the poll plan follows the config
	"github.max_concurrent_requests": Live,

	// An [[account]]: added or removed whole live (validate makes sure no target names a missing
	// one); its name and api_url are its identity, what its targets' runners are registered
	// against, so they need a restart; its credential and governor change like [github]'s.
	"account":                         Live,
	"account.name":                    Restart,
	"account.api_url":                 Restart,
	"account.token_file":              Live,
	"account.app_id":                  Live,
	"account.app_client_id":           Live,
	"account.installation_id":         Live,
	"account.private_key_file":        Live,
	"account.device_flow.client_id":   Live,
	"account.points_per_minute":       Live,
	"account.max_concurrent_requests": Live,

	"webhook.listen":        Restart, // the listener and its secret are set up once, at start
	"webhook.path":          Restart,
	"webhook.secret_file":   Restart,
	"webhook.poll_interval": Restart,

	"fleet.etcd_endpoints": Restart, // the fleet membership is joined once, at start
	"fleet.etcd_ca_file":   Restart,
	"fleet.etcd_cert_file": Restart,
	"fleet.etcd_key_file":  Restart,
	"fleet.name":           Restart,
	"fleet.host_name":      Restart,
	"fleet.lease_ttl":      Restart,

	"target":                            Live,
	"target.name":                       Live, // the identity: a rename is a removal plus an addition
	"target.repository":                 Live, // the loop restarts against the new identity
	"target.organization":               Live,
	"target.enterprise":                 Live, // part of the identity, like repository
	"target.account":                    Live, // part of the identity: another account's runners are others
	"target.enabled":                    Live, // the loop starts, or drains
	"target.scale_set":                  Live, // part of the identity: the loop restarts against the new set
	"target.delete_scale_set_on_remove": Live, // read when the target's last runner has drained
	"target.runner_group":               NextPass,
	"target.labels":                     NextPass,
	"target.max_runners":                NextPass,
	"target.min_idle":                   NextPass,
	"target.schedule.cron":              NextPass, // each pass reads the entry in force at its own time
	"target.schedule.time_zone":         NextPass,
	"target.schedule.min_idle":          NextPass,
	"target.schedule.max_runners":       NextPass,
	"target.idle_timeout":               NextPass,
	"target.startup_timeout":            NextPass,
	"target.max_job_duration":           NextPass, // a busy runner is measured against it at each pass
	"target.poll_interval":              NextPass,
	"target.idle_poll_interval":         NextPass,
	"target.mode":                       NextPass,
	"target.runner_version":             NextPass,
	"target.work_dir":                   NextPass,
	"target.shared_work_dir":            NextPass,
	"target.env":                        NextPass,
	"target.env_file":                   NextPass, // read at each reload; its values change target.env
	"target.ephemeral":                  NextPass,
	"target.memory_max":                 NextPass,
	"target.cpus":                       NextPass,
	"target.pids_max":                   NextPass,
	"target.min_free_disk":              NextPass,
	"target.executor":                   NextPass, // runners launched after the change; running ones finish where they are
	"target.image":                      NextPass,
	"target.image_pull":                 NextPass,
	"target.registry_auth_file":         NextPass, // read at each pull
	"target.runner_in_image":            NextPass,
	"target.network":                    NextPass,
	"target.volumes":                    NextPass,
	"target.docker":                     NextPass,
	"target.docker_image":               NextPass,
}

// ClassOf returns the class of the key at schema path ("daemon.log_level", "target.labels").
// An unknown path is Restart: never claim that something unknown took effect.
func ClassOf(path string) Class {
	if c, ok := classes[path]; ok {
		return c
	}
	// A list of tables (target.schedule) changes as a whole: its class is its keys' when they agree.
	var class Class
	for p, c := range classes {
		if strings.HasPrefix(p, path+".") {
			if class != "" && class != c {
				return Restart
			}
			class = c
		}
	}
	if class != "" {
		return class
	}
	return Restart
}

// Change is one key whose effective value differs between two snapshots.
type Change struct {
	// Key is the dotted key as written in the file ("daemon.log_level"); inside a target it is
	// relative to it ("max_runners"), and "" when the whole target was added or removed.
	Key     string `json:"key"`
	Target  string `json:"target,omitempty"`  // the target's name, for target keys
	Account string `json:"account,omitempty"` // the [[account]]'s name, for its keys (Key relative to it)
	Class   Class  `json:"class"`
	Old     string `json:"old"` // the value before, as the file would spell it; env values never
	New     string `json:"new"`
}

// Path is the change's schema path, the key of its class ("target.max_runners").
func (c Change) Path() string {
	switch {
	case c.Account != "" && c.Key == "":
		return "account"
	case c.Account != "":
		return "account." + c.Key
	case c.Target == "":
		return c.Key
	case c.Key == "":
		return "target"
	}
	return "target." + c.Key
}

// String is one line for the operator: `target "api": max_runners 2 -> 3 (next pass)`.
func (c Change) String() string {
	what := c.Key
	switch {
	case c.Account != "" && c.Key == "":
		what = fmt.Sprintf("account %q", c.Account)
	case c.Account != "":
		what = fmt.Sprintf("account %q: %s", c.Account, c.Key)
	case c.Target != "" && c.Key == "":
		what = fmt.Sprintf("target %q", c.Target)
	case c.Target != "":
		what = fmt.Sprintf("target %q: %s", c.Target, c.Key)
	}
	return fmt.Sprintf("%s: %s -> %s (%s)", what, c.Old, c.New, c.Class)
}

// Changes is the result of Diff, in file order: [daemon], [github], [webhook], [fleet], then the
// accounts and the targets by name.
type Changes []Change

// Of returns the changes of class c.
func (cs Changes) Of(c Class) Changes {
	return slices.DeleteFunc(slices.Clone(cs), func(ch Change) bool { return ch.Class != c })
}

// Target returns the changed keys of target name (without the whole-target change).
func (cs Changes) Target(name string) []string {
	var keys []string
	for _, c := range cs {
		if c.Target == name && c.Key != "" {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// Keys names the changes for a message: "daemon.state_dir, webhook.listen".
func (cs Changes) Keys() string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Path()
		switch {
		case c.Target != "":
			names[i] = fmt.Sprintf("target %q %s", c.Target, c.Key)
		case c.Account != "":
			names[i] = fmt.Sprintf("account %q %s", c.Account, c.Key)
		}
	}
	return strings.Join(names, ", ")
}

// Diff returns every key whose effective value differs from old to cur, each with its class. old
// nil means nothing ran before (every target is added). Targets are matched by name; an empty
// list equals an absent one, and an absent optional section equals its zero value.
func Diff(old, cur *Config) Changes {
	var out Changes
	if old == nil {
		old = &Config{}
	}
	for _, sec := range []struct {
		key      string
		old, cur any
	}{
		{"daemon", old.Daemon, cur.Daemon}, {"github", old.GitHub, cur.GitHub},
		{"webhook", old.Webhook, cur.Webhook}, {"fleet", old.Fleet, cur.Fleet},
	} {
		walkDiff(sec.key, reflect.ValueOf(sec.old), reflect.ValueOf(sec.cur), func(key, o, n string) {
			out = append(out, Change{Key: key, Class: ClassOf(key), Old: o, New: n})
		})
	}
	out = append(out, diffEntries("account", old.Accounts, cur.Accounts, func(a Account) string { return a.Name },
		func(name string) Change { return Change{Account: name} })...)
	out = append(out, diffEntries("target", old.Targets, cur.Targets, func(t Target) string { return t.Name },
		func(name string) Change { return Change{Target: name} })...)
	return out
}

// diffEntries compares two lists of named tables ([[account]], [[target]]) entry by entry, matched
// by name: an entry only in one list is a whole-entry change of class Live, the keys of one in
// both are compared one by one. change makes a Change naming the entry.
func diffEntries[T any](kind string, old, cur []T, name func(T) string, change func(string) Change) Changes {
	oldE, curE := byName(old, name), byName(cur, name)
	names := make([]string, 0, len(oldE)+len(curE))
	for n := range oldE {
		names = append(names, n)
	}
	for n := range curE {
		if _, ok := oldE[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out Changes
	for _, n := range names {
		o, inOld := oldE[n]
		c, inCur := curE[n]
		switch {
		case !inOld:
			ch := change(n)
			ch.Class, ch.Old, ch.New = Live, "absent", "added"
			out = append(out, ch)
		case !inCur:
			ch := change(n)
			ch.Class, ch.Old, ch.New = Live, "present", "removed"
			out = append(out, ch)
		default:
			walkDiff("", reflect.ValueOf(o), reflect.ValueOf(c), func(key, ov, nv string) {
				ch := change(n)
				ch.Key, ch.Class, ch.Old, ch.New = key, ClassOf(kind+"."+key), ov, nv
				out = append(out, ch)
			})
		}
	}
	return out
}

func byName[T any](ts []T, name func(T) string) map[string]T {
	m := make(map[string]T, len(ts))
	for _, t := range ts {
		m[name(t)] = t
	}
	return m
}

// walkDiff compares two values of one schema type key by key (by koanf tag) and reports each leaf
// that differs. A nil pointer is its type's zero value: an absent section equals an empty one.
func walkDiff(path string, a, b reflect.Value, report func(key, old, cur string)) {
	if a.Type() == boolPtrType {
		// enabled and ephemeral: absent means true
		a, b = reflect.ValueOf(a.IsNil() || a.Elem().Bool()), reflect.ValueOf(b.IsNil() || b.Elem().Bool())
	}
	a, b = deref(a), deref(b)
	if a.Kind() != reflect.Struct {
		if !equalLeaf(a, b) {
			o, n := formatValue(a), formatValue(b)
			if o == n {
				n += " (values changed)" // a target's env: the names stay, a secret value changed
			}
			report(path, o, n)
		}
		return
	}
	for _, f := range keyFields(a.Type()) {
		walkDiff(joinPath(path, f.Tag.Get("koanf")), a.FieldByIndex(f.Index), b.FieldByIndex(f.Index), report)
	}
}

var boolPtrType = reflect.TypeFor[*bool]()

// deref follows pointers; a nil pointer becomes the zero value of what it points to.
func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			if v.Kind() == reflect.Interface {
				return reflect.Value{}
			}
			return reflect.Zero(v.Type().Elem())
		}
		v = v.Elem()
	}
	return v
}

func equalLeaf(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Map:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// formatValue spells a leaf as the file would; a target's env shows its names only, its values
// may be secrets.
func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return "unset"
	}
	switch x := v.Interface().(type) {
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k+"="+RedactedValue)
		}
		sort.Strings(keys)
		return "{" + strings.Join(keys, ", ") + "}"
	case []string:
		return fmt.Sprintf("%q", x)
	case []Schedule:
		entries := make([]string, len(x))
		for i, e := range x {
			entries[i] = e.String()
		}
		return "[" + strings.Join(entries, ", ") + "]"
	case string:
		if x == "" {
			return `""`
		}
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v.Interface())
}
