package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Fleet is the host's view of its [fleet] (absent without one): members, each target's leader,
// the demand its leader published and every host's supply.
type Fleet struct {
	Name    string        `json:"name"`
	Host    string        `json:"host"`
	Joined  bool          `json:"joined"`
	Reason  string        `json:"reason,omitempty"` // why not joined: this host serves every target alone
	Hosts   []FleetHost   `json:"hosts,omitempty"`
	Targets []FleetTarget `json:"targets,omitempty"`
}

// FleetHost is one live member.
type FleetHost struct {
	Name   string    `json:"name"`
	HostID string    `json:"host_id"`
	Since  time.Time `json:"since,omitzero"`
	// PointsPerMinute is the GitHub points the host published as spent over the last minute: the
	// hosts share one account's ceiling (docs/fleet.md).
	PointsPerMinute int `json:"points_per_minute"`
}

// FleetTarget is one target of this host as the fleet serves it.
type FleetTarget struct {
	Name   string        `json:"name"`
	Leader string        `json:"leader,omitempty"` // the host that reads GitHub for it
	Alone  bool          `json:"alone,omitempty"`  // this host's config of it differs from the fleet's
	Demand int           `json:"demand"`           // queued jobs in the leader's view
	ViewAt time.Time     `json:"view_at,omitzero"`
	Supply []FleetSupply `json:"supply,omitempty"`
}

// FleetSupply is one host's published runners of a target.
type FleetSupply struct {
	Host     string `json:"host"`
	Starting int    `json:"starting"`
	Idle     int    `json:"idle"`
	Free     int    `json:"free"`
}

// RenderFleet writes `runner-manager status --fleet`: membership, then per target its leader,
// demand and each host's supply.
func RenderFleet(w io.Writer, f *Fleet, now time.Time) error {
	p := &printer{w: w}
	if f == nil {
		p.linef("this host is not in a fleet (no [fleet] section): it serves its targets alone")
		return p.err
	}
	if !f.Joined {
		p.linef("fleet %s, host %s: NOT JOINED (%s); serving every target alone, bounded by this host's capacity, with the whole GitHub points ceiling", f.Name, f.Host, dash(f.Reason))
		return p.err
	}
	names := make([]string, len(f.Hosts))
	for i, h := range f.Hosts {
		names[i] = h.Name
	}
	p.linef("fleet %s, host %s: joined; %d live hosts: %s", f.Name, f.Host, len(f.Hosts), strings.Join(names, ", "))
	spent := make([]string, len(f.Hosts))
	for i, h := range f.Hosts {
		spent[i] = fmt.Sprintf("%s %d", h.Name, h.PointsPerMinute)
	}
	p.linef("GitHub points spent in the last minute (one ceiling, shared): %s", strings.Join(spent, ", "))
	p.linef("")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p.tablef(tw, "TARGET\tLEADER\tDEMAND\tVIEW AGE\tSUPPLY (host starting/idle/free)\tSTATE")
	for _, t := range f.Targets {
		var sup []string
		for _, s := range t.Supply {
			sup = append(sup, fmt.Sprintf("%s %d/%d/%d", s.Host, s.Starting, s.Idle, s.Free))
		}
		state := "shared"
		if t.Alone {
			state = "ALONE: config differs from the fleet's"
		}
		p.tablef(tw, "%s\t%s\t%d\t%s\t%s\t%s", t.Name, dash(t.Leader), t.Demand, age(now, t.ViewAt), dash(strings.Join(sup, ", ")), state)
	}
	p.flush(tw)
	return p.err
}
