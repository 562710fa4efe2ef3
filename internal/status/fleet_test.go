package status

import (
	"bytes"
	"testing"
	"time"
)

// TestRenderFleet: `status --fleet` for a joined host, a host that lost etcd, and no fleet at all.
func TestRenderFleet(t *testing.T) {
	joined := &Fleet{Name: "ci", Host: "b", Joined: true,
		Hosts: []FleetHost{{Name: "a", HostID: "3f2a", PointsPerMinute: 412}, {Name: "b", HostID: "91c0", PointsPerMinute: 35}, {Name: "c", HostID: "77d1"}},
		Targets: []FleetTarget{
			{Name: "web", Leader: "a", Demand: 3, ViewAt: ago(2 * time.Second), Supply: []FleetSupply{{Host: "a", Starting: 1, Idle: 0, Free: 3}, {Host: "b", Starting: 2, Free: 2}}},
			{Name: "api", Leader: "c", Alone: true, ViewAt: ago(time.Minute)},
		}}
	for name, f := range map[string]*Fleet{
		"fleet-joined.txt": joined,
		"fleet-lost.txt":   {Name: "ci", Host: "b", Reason: "lease lost: etcd did not answer within lease_ttl"},
		"fleet-none.txt":   nil,
	} {
		var buf bytes.Buffer
		if err := RenderFleet(&buf, f, now); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, buf.Bytes())
	}
}
