package fleet

import (
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	gh "github.com/runner-manager/runner-manager/internal/github"
)

// Governor is this host's GitHub request governor (internal/github.Governor, through the daemon,
// which keeps it across client rebuilds): the fleet publishes what it spent and sets its share of
// the ceiling from what the other hosts spent, so one account's budget is shared fleet-wide.
type Governor interface {
	// Spend is what each account sent over the last minute.
	Spend() map[string]gh.Spend
	// SetFleet sets the other hosts' spend; nil gives this host the whole ceiling (not joined).
	SetFleet(*gh.FleetShare)
	// Wants is signalled when an account starts waiting for points (nil: never).
	Wants() <-chan struct{}
}

// spendEvery is how often a host publishes its spend when it changed. A host that starts waiting
// publishes at once (Governor.Wants), so the others do not count on the pool it now wants.
const spendEvery = time.Second

// shareBudget publishes this host's spend and keeps its governor's share up to date, for the
// epoch's life; the share follows the other hosts' publications as the watch brings them.
func (f *Fleet) shareBudget(ep *epoch) {
	defer ep.wg.Done()
	tick := time.NewTicker(spendEvery)
	defer tick.Stop()
	var last map[string]gh.Spend
	for {
		if spend := f.o.Governor.Spend(); spendChanged(last, spend) {
			b, _ := json.Marshal(spend)
			ctx, cancel := f.opCtx(ep.ctx)
			resp, err := f.client.Put(ctx, f.keys.spend(f.host), string(b), clientv3.WithLease(ep.sess.Lease()))
			cancel()
			if err != nil {
				f.failed(ep, err)
				return
			}
			f.noteWrite(resp.Header.Revision)
			last = spend
		}
		f.applyShare(ep)
		select {
		case <-ep.ctx.Done():
			return
		case <-tick.C:
		case <-f.o.Governor.Wants():
		}
	}
}

// spendChanged: worth a write when an account appears or goes, starts or stops waiting, or its
// points moved by a twentieth (at least 2): the shares do not need every point, etcd every second.
func spendChanged(last, now map[string]gh.Spend) bool {
	if len(last) != len(now) {
		return true
	}
	for k, n := range now {
		l, ok := last[k]
		if !ok || l.Waiting != n.Waiting || (n.Points == 0) != (l.Points == 0) {
			return true
		}
		if d := n.Points - l.Points; max(d, -d) >= max(2, l.Points/20) {
			return true
		}
	}
	return false
}

// applyShare sets the governor's share from the mirror: the live hosts and the others' spend.
func (f *Fleet) applyShare(ep *epoch) {
	if f.o.Governor == nil {
		return
	}
	f.o.Governor.SetFleet(f.fleetShare(ep))
}

func (f *Fleet) fleetShare(ep *epoch) *gh.FleetShare {
	members, _ := ep.mir.prefix(f.keys.members())
	fs := &gh.FleetShare{Hosts: max(len(members), 1), Others: map[string][]gh.Spend{}}
	if _, ok := members[f.host]; !ok {
		fs.Hosts++ // the mirror has not seen this host's own membership yet
	}
	spends, _ := ep.mir.prefix(f.keys.spends())
	for host, e := range spends {
		if host == f.host {
			continue
		}
		if _, live := members[host]; !live {
			continue
		}
		var byAccount map[string]gh.Spend
		if json.Unmarshal([]byte(e.val), &byAccount) != nil {
			continue
		}
		for acct, s := range byAccount {
			fs.Others[acct] = append(fs.Others[acct], s)
		}
	}
	return fs
}

// spendOf is what host last published (for status), in points over the last minute, all accounts.
func spendOf(ep *epoch, k keys, host string) int {
	e, ok := ep.mir.get(k.spend(host))
	if !ok {
		return 0
	}
	var byAccount map[string]gh.Spend
	_ = json.Unmarshal([]byte(e.val), &byAccount)
	n := 0
	for _, s := range byAccount {
		n += s.Points
	}
	return n
}
