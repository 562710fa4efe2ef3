package status

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes v (a Snapshot or RunnerList) as indented JSON: the --json output.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// RenderStatus writes the operator's view of a Snapshot: daemon, config, GitHub contact, a table of
// targets and the recent events. now is injected so ages are testable.
func RenderStatus(w io.Writer, s Snapshot, now time.Time) error {
	p := &printer{w: w}
	p.linef("runner-manager %s, pid %d, up %s", s.Version, s.PID, age(now, s.StartedAt))
	if s.Draining != "" {
		p.linef("DRAINING for %s: no new runners; busy runners finish their jobs", s.Draining)
	}
	p.linef("config:     %s, generation %d", s.Config.Path, s.Config.Generation)
	switch r := s.Config.LastReload; {
	case r.At.IsZero():
		p.linef("            not loaded yet")
	case r.OK:
		p.linef("            last reload ok, %s ago", age(now, r.At))
	default:
		p.linef("            last reload FAILED %s ago; still running generation %d:", age(now, r.At), s.Config.Generation)
		for _, e := range r.Error {
			p.linef("              %s", e)
		}
	}
	if w := s.Config.Watch; w != nil && !w.Healthy {
		p.linef("            file watch LOST (%s): edits are seen within 10 s by a stat check; SIGHUP reloads at once", w.Error)
	}
	// With several accounts each has its own contact, and its own plan against its own ceiling, so
	// each gets its lines: one account's broken credential is not hidden by another's answers. With
	// [github] alone the lines are those of the versions before accounts; so is the contact line
	// of a daemon older than github_last_contact_by_account.
	accounts := s.accounts()
	contacts := len(accounts) > 1 && s.GitHubLastContactByAccount != nil
	if !contacts {
		p.linef("github:     %s", contactAge(now, s.GitHubLastContact))
	}
	if len(accounts) > 1 {
		lead := "github:     "
		for _, name := range accounts {
			if contacts {
				p.linef("%saccount %s: %s", lead, name, contactAge(now, s.GitHubLastContactByAccount[name]))
				lead = "            "
			}
			if pl := s.GitHubPollingByAccount[name]; pl != nil {
				p.polling("account "+name+": ", pl)
			}
		}
	} else if pl := s.GitHubPolling; pl != nil {
		p.polling("", pl)
	}
	switch i := s.Isolation; {
	case i == nil:
	case i.Cgroups:
		p.linef("isolation:  a cgroup per runner in %s", i.CgroupRoot)
	default:
		p.linef("isolation:  NO CGROUPS (%s): runner limits cannot apply (launches the config bounds are refused); a slot's leftovers are killed by its uid", i.NoCgroups)
	}
	owned := 0
	for _, t := range s.Targets {
		owned += t.Owned
	}
	p.linef("capacity:   %d of %d runners", owned, s.MaxRunners)

	p.linef("")
	if len(s.Targets) == 0 {
		p.linef("no targets configured")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		p.tablef(tw, "TARGET\tSCOPE\tMODE\tDEMAND\tOWNED\tSTARTING\tBUSY\tIDLE\tMAX\tLAST PASS\tSTATE")
		for _, t := range s.Targets {
			p.tablef(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s", t.Name, t.Scope, t.Mode, t.Demand,
				t.Owned, t.Starting, t.Busy, t.Idle, t.MaxRunners, age(now, t.LastPass), targetState(t, now))
		}
		p.flush(tw)
		for _, t := range s.Targets {
			if f := t.LastFailure; f != nil {
				p.linef("%s: last failure %s ago, attempt %s: %s; see `%s`", t.Name, age(now, f.At), f.Attempt, oneLine(f.Reason), f.Command)
			}
		}
		for _, t := range s.Targets {
			if t.Schedule != nil {
				p.linef("%s: %s", t.Name, t.Schedule.Describe(now))
			}
		}
	}

	if len(s.Events) > 0 {
		p.linef("")
		p.linef("RECENT EVENTS")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		p.tablef(tw, "AGO\tTARGET\tATTEMPT\tKIND\tMESSAGE")
		for _, e := range s.Events {
			p.tablef(tw, "%s\t%s\t%s\t%s\t%s", age(now, e.At), dash(e.Target), dash(e.Attempt), e.Kind, oneLine(e.Message))
		}
		p.flush(tw)
	}
	return p.err
}

// polling writes one account's poll plan, each line after prefix.
// accounts names, sorted, every account the snapshot has a contact or a poll plan of.
func (s Snapshot) accounts() []string {
	names := slices.Collect(maps.Keys(s.GitHubPollingByAccount))
	for name := range s.GitHubLastContactByAccount {
		if _, ok := s.GitHubPollingByAccount[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// contactAge is status's phrase for a last successful contact at t (zero: none).
func contactAge(now, t time.Time) string {
	if t.IsZero() {
		return "no successful contact yet"
	}
	return "last successful contact " + age(now, t) + " ago"
}

func (p *printer) polling(prefix string, pl *Polling) {
	if pl.Message != "" {
		p.linef("            %spolling STRETCHED: %s", prefix, pl.Message)
	} else {
		p.linef("            %spolling needs %d of %d points/min", prefix, pl.NeedPerMinute, pl.PointsPerMinute)
	}
	switch f := pl.Fleet; {
	case f == nil:
	case f.Hosts > 0:
		p.linef("            %sfleet: %d hosts share the ceiling; this host's share now %d points/min", prefix, f.Hosts, f.SharePerMinute)
	default:
		p.linef("            %sfleet NOT JOINED: this host uses the whole ceiling alone (the hosts together may exceed it)", prefix)
	}
}

// RenderRunners writes one line per runner, grouped by target and oldest first.
func RenderRunners(w io.Writer, runners []Runner, now time.Time) error {
	p := &printer{w: w}
	if len(runners) == 0 {
		p.linef("no runners")
		return p.err
	}
	sorted := slices.Clone(runners)
	slices.SortStableFunc(sorted, func(a, b Runner) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Name, b.Name))
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p.tablef(tw, "TARGET\tNAME\tID\tSTATE\tAGE\tJOB")
	for _, r := range sorted {
		id := "-"
		if r.ID != 0 {
			id = strconv.FormatInt(r.ID, 10)
		}
		job := "-"
		if r.JobID != 0 {
			job = strings.TrimSpace(fmt.Sprintf("%d %s", r.JobID, r.JobName))
		}
		p.tablef(tw, "%s\t%s\t%s\t%s\t%s\t%s", r.Target, r.Name, id, r.State, age(now, r.StartedAt), job)
	}
	p.flush(tw)
	return p.err
}

// targetState is the STATE column: what an operator should look at first.
func targetState(t Target, now time.Time) string {
	switch {
	case !t.Enabled:
		return "disabled"
	case t.Draining:
		return "draining"
	case t.Backoff.Active:
		s := "backoff"
		if t.Backoff.Reason != "" {
			s += " (" + oneLine(t.Backoff.Reason) + ")"
		}
		if !t.Backoff.Until.IsZero() {
			s += ", retry in " + age(t.Backoff.Until, now)
		}
		if t.LastError != "" {
			s += ": " + oneLine(t.LastError)
		}
		return s
	case t.LastError != "":
		return "error: " + oneLine(t.LastError)
	case t.Warning != "":
		return "ok, in part: " + oneLine(t.Warning)
	}
	return "ok"
}

// age is a compact duration from then to now, like kubectl's AGE column ("45s", "12m", "3h4m", "2d5h").
// A zero time is "-"; a time in the future is "0s".
func age(now, then time.Time) string {
	if then.IsZero() {
		return "-"
	}
	d := max(now.Sub(then), 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 10*time.Minute:
		return trimZero(fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return trimZero(fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60))
	}
	return trimZero(fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24))
}

func trimZero(s string) string {
	for _, z := range []string{"m0s", "h0m", "d0h"} {
		if strings.HasSuffix(s, z) {
			return s[:len(s)-len(z)+1]
		}
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a multi-line message from breaking the table.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// printer remembers the first write error so renderers can write line after line and check once.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) linef(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) tablef(tw *tabwriter.Writer, format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(tw, format+"\n", args...)
	}
}

func (p *printer) flush(tw *tabwriter.Writer) {
	if p.err == nil {
		p.err = tw.Flush()
	}
}
