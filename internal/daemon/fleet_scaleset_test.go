package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/fleet/etcdtest"
	"github.com/runner-manager/runner-manager/internal/status"
)

// peer is another host's files on e's simulator: a second daemon of a fleet.
func (e *env) peer() *env {
	e.t.Helper()
	dir, err := os.MkdirTemp("", "rmd")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { os.RemoveAll(dir) })
	p := &env{t: e.t, srv: e.srv, dir: dir, configPath: filepath.Join(dir, "config.toml"), stateDir: filepath.Join(dir, "state"),
		tokenFile: e.tokenFile, secretFile: e.secretFile, metricsAddr: freeAddr(e.t), webhookAddr: freeAddr(e.t),
		logs: filepath.Join(dir, "daemon.log")}
	e.srv.AddWebhook("http://"+p.webhookAddr+"/webhook", "webhook-test-secret")
	return p
}

// fleetSection is a [fleet] on etcd for host name.
func fleetSection(etcd *etcdtest.Server, host string) string {
	return fmt.Sprintf(`
[fleet]
etcd_endpoints = [%q]
name = "t"
host_name = %q
lease_ttl = "2s"
`, etcd.Endpoint(), host)
}

// TestFleetScaleSetOneSessionHandedOver: two hosts serve one scale-set target. Only the target's
// leader holds the set's message session (one created, no create refused: the follower never asks
// for one); the follower registers runners through the set's JIT endpoint with the set id the
// leader published, so jobs beyond the leader's capacity run on the follower. When the leader
// stops, the follower becomes the leader and opens the session, and new jobs still run.
func TestFleetScaleSetOneSessionHandedOver(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	a := newEnv(t)
	b := a.peer()
	a.writeRaw(a.configText(scaleSetTarget) + fleetSection(etcd, "host-a"))
	b.writeRaw(b.configText(scaleSetTarget) + fleetSection(etcd, "host-b"))
	stopA := a.startStoppable()
	a.waitStatus("host-a leads web and its session is open", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "open" && s.Fleet != nil && len(s.Fleet.Targets) == 1 && s.Fleet.Targets[0].Leader == "host-a"
	})
	b.start()
	b.waitStatus("host-b follows", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "held by the fleet's leader" && s.Fleet != nil && len(s.Fleet.Hosts) == 2
	})
	var ids []int64
	for range 4 { // daemon max_runners is 2 on each host: two hosts are needed
		id, err := a.srv.QueueJob("acme/web", []string{"web-set"}, -1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	a.waitStatus("two runners busy on host-a", func(s status.Snapshot) bool { return target(s).Busy == 2 })
	b.waitStatus("two runners busy on host-b", func(s status.Snapshot) bool { return target(s).Busy == 2 })
	if got := a.srv.ScaleSets(); len(got) != 1 || got[0].Opened != 1 || got[0].Conflicts != 0 {
		t.Fatalf("scale sets %+v: want one set, one session opened, no create refused", got)
	}
	for _, id := range ids {
		if err := a.srv.FinishJob(id, "success", false); err != nil {
			t.Fatal(err)
		}
	}
	b.waitStatus("host-b's runners concluded", func(s status.Snapshot) bool { return target(s).Owned == 0 })

	stopA()
	b.waitStatus("host-b leads web with its own session", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "open" && s.Fleet.Targets[0].Leader == "host-b"
	})
	if got := a.srv.ScaleSets()[0]; got.Opened != 2 || got.Conflicts != 0 {
		t.Errorf("after the hand-over: %d sessions opened, %d refused; want 2 and 0", got.Opened, got.Conflicts)
	}
	id, err := a.srv.QueueJob("acme/web", []string{"web-set"}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus("the job queued after the hand-over ran", func(status.Snapshot) bool {
		for _, j := range a.srv.Jobs() {
			if j.ID == id {
				return j.Status == "completed"
			}
		}
		return false
	})
}
