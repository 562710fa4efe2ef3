package fleet

import (
	"encoding/json"
	"sort"

	"github.com/runner-manager/runner-manager/internal/status"
)

// Status is what `runner-manager status --fleet` shows, from the mirror: no request to etcd.
func (f *Fleet) Status() *status.Fleet {
	f.mu.Lock()
	ep, reason := f.ep, f.reason
	names := make([]string, 0, len(f.targets))
	for n := range f.targets {
		names = append(names, n)
	}
	alone := make(map[string]bool, len(f.alone))
	for n, a := range f.alone {
		alone[n] = a
	}
	f.mu.Unlock()
	sort.Strings(names)
	st := &status.Fleet{Name: f.o.Config.Name, Host: f.host, Joined: ep != nil}
	if ep == nil {
		st.Reason = reason
		return st
	}
	members, _ := ep.mir.prefix(f.keys.members())
	for name, e := range members {
		var m member
		_ = json.Unmarshal([]byte(e.val), &m)
		st.Hosts = append(st.Hosts, status.FleetHost{Name: name, HostID: m.HostID, Since: m.Since, PointsPerMinute: spendOf(ep, f.keys, name)})
	}
	sort.Slice(st.Hosts, func(i, j int) bool { return st.Hosts[i].Name < st.Hosts[j].Name })
	for _, n := range names {
		ts := status.FleetTarget{Name: n, Leader: leaderOf(ep, f.keys, n), Alone: alone[n]}
		if e, ok := ep.mir.get(f.keys.view(n)); ok {
			var v view
			if json.Unmarshal([]byte(e.val), &v) == nil {
				ts.Demand, ts.ViewAt = len(v.Jobs), v.At
			}
		}
		sup, _ := ep.mir.prefix(f.keys.supplies(n))
		for host, e := range sup {
			var s supply
			if json.Unmarshal([]byte(e.val), &s) == nil {
				ts.Supply = append(ts.Supply, status.FleetSupply{Host: host, Starting: s.Starting, Idle: s.Idle, Free: s.Free})
			}
		}
		sort.Slice(ts.Supply, func(i, j int) bool { return ts.Supply[i].Host < ts.Supply[j].Host })
		st.Targets = append(st.Targets, ts)
	}
	return st
}
