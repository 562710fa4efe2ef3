package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// RenderTop is one frame of `runner-manager top`: exactly height lines (at least 10), none wider
// than width (at least 40), so a terminal of any size shows a whole frame. The header lines
// (daemon, GitHub and the governor, fleet role, runners by state) always show; targets take the
// rows they need up to about half of what remains, and the latest events fill the rest.
func RenderTop(s Snapshot, now time.Time, width, height int) string {
	width, height = max(width, 40), max(height, 10)
	head := topHeader(s, now)
	targets := topTargets(s, now)
	footer := "q quit  r refresh"
	room := height - len(head) - 1 - 1 // a blank line before the targets, the footer
	// Targets get what they need, but leave the events at least 4 lines (a title and 3 events)
	// when there are any.
	maxTargets := room
	if len(s.Events) > 0 {
		maxTargets = max(room-5, 2)
	}
	if len(targets) > maxTargets {
		more := len(targets) - (maxTargets - 1)
		targets = append(targets[:maxTargets-1], fmt.Sprintf("... %d more targets (runner-manager status lists them all)", more))
	}
	lines := append(head, "")
	lines = append(lines, targets...)
	if left := height - len(lines) - 1; left >= 3 && len(s.Events) > 0 {
		lines = append(lines, "", "RECENT EVENTS")
		events := s.Events[max(len(s.Events)-(left-2), 0):]
		for _, e := range events {
			lines = append(lines, fmt.Sprintf("%s ago  %s  %s  %s", age(now, e.At), dash(e.Target), e.Kind, oneLine(e.Message)))
		}
	}
	for len(lines) < height-1 {
		lines = append(lines, "")
	}
	lines = append(lines[:height-1], footer)
	for i, l := range lines {
		lines[i] = TruncateLine(l, width)
	}
	return strings.Join(lines, "\n")
}

// TruncateLine cuts l to width runes, marking a cut with "~".
func TruncateLine(l string, width int) string {
	if r := []rune(l); len(r) > width {
		return string(r[:width-1]) + "~"
	}
	return l
}

// topHeader is the daemon, GitHub, fleet and runner lines.
func topHeader(s Snapshot, now time.Time) []string {
	reload := "reload ok"
	if r := s.Config.LastReload; !r.OK && !r.At.IsZero() {
		reload = "last reload FAILED"
	}
	head := []string{fmt.Sprintf("%s  runner-manager %s  pid %d  up %s  config gen %d, %s",
		now.UTC().Format("15:04:05Z"), s.Version, s.PID, age(now, s.StartedAt), s.Config.Generation, reload)}
	if s.Draining != "" {
		head = append(head, fmt.Sprintf("DRAINING for %s: no new runners; busy runners finish their jobs", s.Draining))
	}
	gh := "github: no successful contact yet"
	if !s.GitHubLastContact.IsZero() {
		gh = fmt.Sprintf("github: last contact %s ago", age(now, s.GitHubLastContact))
	}
	if accounts := s.accounts(); len(accounts) > 1 && s.GitHubLastContactByAccount != nil {
		// Each account's own, so one whose credential broke shows while another answers.
		ages := make([]string, len(accounts))
		for i, name := range accounts {
			ages[i] = name + " none yet"
			if t := s.GitHubLastContactByAccount[name]; !t.IsZero() {
				ages[i] = name + " " + age(now, t) + " ago"
			}
		}
		gh = "github: last contact " + strings.Join(ages, ", ")
	}
	// Each account has its own governor and ceiling, so with several each gets a line, as in
	// `status`; with [github] alone the governor shares the GitHub line.
	by := s.GitHubPollingByAccount
	if pl := s.GitHubPolling; pl != nil && len(by) <= 1 {
		gh += "  governor: " + governorLine(pl)
	}
	head = append(head, gh)
	if len(by) > 1 {
		for _, name := range slices.Sorted(maps.Keys(by)) {
			head = append(head, "  governor "+name+": "+governorLine(by[name]))
		}
	}
	head = append(head, fleetRole(s.Fleet))
	var owned, busy, idle, starting int
	for _, t := range s.Targets {
		owned, busy, idle, starting = owned+t.Owned, busy+t.Busy, idle+t.Idle, starting+t.Starting
	}
	return append(head, fmt.Sprintf("runners: %d of %d  busy %d  idle %d  starting %d", owned, s.MaxRunners, busy, idle, starting))
}

// governorLine is one account's request governor: what it used of the ceiling (its fleet share in
// a fleet) and what the polls need.
func governorLine(pl *Polling) string {
	ceiling := pl.PointsPerMinute
	if pl.Fleet != nil {
		ceiling = pl.Fleet.SharePerMinute
	}
	line := fmt.Sprintf("%d of %d points/min used, polls need %d", pl.UsedPerMinute, ceiling, pl.NeedPerMinute)
	if pl.Stretch > 1 {
		line += fmt.Sprintf(", intervals x%.1f", pl.Stretch)
	}
	return line
}

// fleetRole says whether this host is in a fleet and which targets it leads (reads GitHub for).
func fleetRole(f *Fleet) string {
	switch {
	case f == nil:
		return "fleet: none (this host serves its targets alone)"
	case !f.Joined:
		return fmt.Sprintf("fleet %s: NOT JOINED (%s); serving every target alone", f.Name, f.Reason)
	}
	leads := 0
	for _, t := range f.Targets {
		if t.Leader == f.Host {
			leads++
		}
	}
	return fmt.Sprintf("fleet %s: joined as %s, %d hosts; leader of %d of %d targets", f.Name, f.Host, len(f.Hosts), leads, len(f.Targets))
}

// topTargets is the targets table, its header first.
func topTargets(s Snapshot, now time.Time) []string {
	if len(s.Targets) == 0 {
		return []string{"no targets configured"}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tDEMAND\tBUSY\tIDLE\tSTART\tMAX\tQUEUE p50/p95\tSTATE")
	for _, t := range s.Targets {
		queue := "-"
		if q := t.QueueLatency; q != nil {
			queue = fmt.Sprintf("%s/%s", seconds(q.P50Seconds), seconds(q.P95Seconds))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Name, t.Demand, t.Busy, t.Idle, t.Starting, t.MaxRunners, queue, targetState(t, now))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// seconds is a latency as top shows it: "850ms", "12s", "3m4s".
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
