package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// epoch is one membership: a session (lease), the mirror its watch keeps, and the campaigns run
// under it. Losing etcd ends the epoch; rejoining starts a new one.
type epoch struct {
	sess   *concurrency.Session
	mir    *mirror
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed chan struct{}
	once   sync.Once
	// Guarded by Fleet.mu.
	campaigns map[string]*campaign
}

// campaign is this host's candidacy to read GitHub for one target.
type campaign struct {
	cancel  context.CancelFunc
	elected bool
	key     string // the election key while elected (fences the views it publishes)
	rev     int64
}

func (ep *epoch) fail() { ep.once.Do(func() { close(ep.failed) }) }

// member is what hosts/<host> holds.
type member struct {
	HostID   string    `json:"host_id"`
	Instance string    `json:"instance"`
	Since    time.Time `json:"since"`
}

// errHeld: the membership key is held by another live process (it may be this host's previous
// process, whose lease has not expired yet).
type errHeld struct{ by member }

func (e errHeld) Error() string {
	return fmt.Sprintf("host_name is held by a live host (host id %s, process %s, since %s)", e.by.HostID, e.by.Instance, e.by.Since.Format(time.RFC3339))
}

// Start joins the fleet before the daemon serves anything. A previous process of this host may
// still hold the membership for up to lease_ttl after a crash, so a held name is retried for two
// TTLs before it is refused (ErrDuplicateHost). etcd unreachable is not an error: the host serves
// alone and Run keeps trying to join.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.Lock()
	f.runCtx = context.WithoutCancel(ctx)
	f.mu.Unlock()
	deadline := time.Now().Add(2*f.ttl + f.opTO)
	for {
		err := f.join(ctx)
		var held errHeld
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrHostIDMismatch):
			return err
		case errors.As(err, &held) && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(f.ttl / 4):
			}
			continue
		case errors.As(err, &held):
			return fmt.Errorf("fleet %s: %w %q: %v; give each host its own fleet.host_name", f.o.Config.Name, ErrDuplicateHost, f.host, err)
		default:
			f.setReason(fmt.Sprintf("etcd unreachable: %v", err))
			f.log.Warn("fleet: etcd unreachable; serving alone until it answers", "err", err)
			return nil
		}
	}
}

// Run keeps the membership until ctx ends: when etcd is lost the host serves alone (independent
// mode) and rejoins as soon as etcd answers again. On return the membership is given up, so the
// host's supply stops counting and its leaderships move at once.
func (f *Fleet) Run(ctx context.Context) error {
	retry := 500 * time.Millisecond
	for {
		f.mu.Lock()
		ep := f.ep
		f.mu.Unlock()
		if ep == nil {
			if err := f.join(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				f.setReason(fmt.Sprintf("cannot join: %v", err))
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(retry):
				}
				retry = min(retry*2, f.ttl)
				continue
			}
			retry = 500 * time.Millisecond
			continue
		}
		select {
		case <-ctx.Done():
			f.leave(ep, true)
			return nil
		case <-ep.sess.Done():
			f.leave(ep, false)
			f.setReason("lease lost: etcd did not answer within lease_ttl")
		case <-ep.failed:
			f.leave(ep, true)
			f.setReason("etcd did not answer")
		}
		f.log.Warn("fleet: lost etcd; serving every target alone, bounded by this host's capacity, until it rejoins", "reason", f.Reason())
	}
}

func (f *Fleet) setReason(r string) {
	f.mu.Lock()
	f.reason = r
	f.mu.Unlock()
}

// Reason says why the host is not joined ("" when joined).
func (f *Fleet) Reason() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ep != nil {
		return ""
	}
	return f.reason
}

// join binds host_name to the host id, opens a session, takes the membership, loads the mirror
// and starts the watch and the campaigns.
func (f *Fleet) join(ctx context.Context) error {
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	idKey := f.keys.hostID(f.host)
	resp, err := f.client.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(idKey), "=", 0)).
		Then(clientv3.OpPut(idKey, f.o.HostID)).Else(clientv3.OpGet(idKey)).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		if got := string(resp.Responses[0].GetResponseRange().Kvs[0].Value); got != f.o.HostID {
			return fmt.Errorf("fleet %s: %w: host_name %q is bound to host id %s, but this state dir's journal has host id %s; runners are named after the host id and only that host's journal can recover them. Give this host its own fleet.host_name, or, if host %s is retired for good, delete the binding (etcdctl del %s)",
				f.o.Config.Name, ErrHostIDMismatch, f.host, got, f.o.HostID, got, idKey)
		}
	}
	sess, err := concurrency.NewSession(f.client, concurrency.WithTTL(int(f.ttl/time.Second)), concurrency.WithContext(f.runCtxOr(ctx)))
	if err != nil {
		return err
	}
	if err := f.takeMembership(octx, sess); err != nil {
		f.revoke(sess)
		return err
	}
	all, err := f.client.Get(octx, f.keys.root, clientv3.WithPrefix())
	if err != nil {
		f.revoke(sess)
		return err
	}
	ectx, ecancel := context.WithCancel(sess.Ctx())
	ep := &epoch{sess: sess, mir: newMirror(), ctx: ectx, cancel: ecancel, failed: make(chan struct{}), campaigns: map[string]*campaign{}}
	ep.mir.load(all)
	ep.wg.Add(1)
	go f.watch(ep, all.Header.Revision+1)
	f.mu.Lock()
	f.ep, f.lastPub = ep, map[string]string{}
	f.mu.Unlock()
	f.syncTargets(ep)
	if f.o.Governor != nil {
		ep.wg.Add(1)
		go f.shareBudget(ep)
	}
	f.log.Info("fleet: joined", "host", f.host, "lease_ttl", f.ttl.String())
	if f.o.OnJoined != nil {
		f.o.OnJoined(true)
	}
	return nil
}

func (f *Fleet) runCtxOr(ctx context.Context) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runCtx != nil {
		return f.runCtx
	}
	return context.WithoutCancel(ctx)
}

// takeMembership creates hosts/<host> under the session's lease. A key left by this process's own
// previous session (etcd was lost and came back) is revoked and taken; another process's is held.
func (f *Fleet) takeMembership(ctx context.Context, sess *concurrency.Session) error {
	key := f.keys.member(f.host)
	val, _ := json.Marshal(member{HostID: f.o.HostID, Instance: f.instance, Since: time.Now().UTC()})
	for range 2 {
		resp, err := f.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(sess.Lease()))).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		var by member
		_ = json.Unmarshal(kv.Value, &by)
		if by.Instance != f.instance {
			return errHeld{by: by}
		}
		if _, err := f.client.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
			return err
		}
	}
	return errors.New("membership taken over and over")
}

// leave ends an epoch: campaigns and the watch stop; with revoke, the lease goes at once (a clean
// stop or a failed request: the keys are ours to drop), otherwise it expired already.
func (f *Fleet) leave(ep *epoch, revoke bool) {
	f.mu.Lock()
	if f.ep == ep {
		f.ep = nil
	}
	f.mu.Unlock()
	ep.cancel()
	// A campaign cancelled mid-way resigns on the client's own context (etcd's Campaign does), which
	// only an answer from etcd or Close ends: wait for the epoch's goroutines at most a request's
	// time, and leave the rest to Close, so a stop or a rejoin never waits for etcd to return
	// (TestStopWithoutEtcdIsBounded).
	done := make(chan struct{})
	go func() { ep.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(f.opTO):
		f.mu.Lock()
		f.stray = append(f.stray, done)
		f.mu.Unlock()
	}
	if revoke {
		f.revoke(ep.sess)
	} else {
		ep.sess.Orphan()
	}
	if f.o.Governor != nil {
		// Alone, the host has the whole ceiling again, as without a fleet: the hosts together may
		// now exceed it (docs/fleet.md), the price of serving while etcd is away.
		f.o.Governor.SetFleet(nil)
	}
	if f.o.OnJoined != nil {
		f.o.OnJoined(false)
	}
	// Each target's loop passes now, alone.
	for _, n := range f.targetNames() {
		f.o.Wake(n)
	}
}

func (f *Fleet) revoke(sess *concurrency.Session) {
	sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), f.opTO)
	defer cancel()
	_, _ = f.client.Revoke(ctx, sess.Lease())
}

// watch keeps the mirror and wakes loops: a view from another host (followers), a webhook delivery
// another host received (the leader).
func (f *Fleet) watch(ep *epoch, from int64) {
	defer ep.wg.Done()
	wc := f.client.Watch(clientv3.WithRequireLeader(ep.ctx), f.keys.root, clientv3.WithPrefix(), clientv3.WithRev(from))
	for wr := range wc {
		if err := wr.Err(); err != nil {
			f.log.Warn("fleet: watch failed", "err", err)
			ep.fail()
			return
		}
		reshare := false
		for _, ev := range ep.mir.apply(wr) {
			kind, parts := f.keys.parse(string(ev.Kv.Key))
			if (kind == "spend" || kind == "hosts") && len(parts) == 1 && parts[0] != f.host {
				reshare = true // another host's spend, or a host came or went
			}
			if len(parts) == 0 || ev.Type != clientv3.EventTypePut {
				continue
			}
			target := parts[0]
			switch {
			case kind == "view" && !f.sameHost(ev.Kv.Value) && !f.leads(target):
				f.o.Wake(target)
			case kind == "wake" && string(ev.Kv.Value) != f.host && f.leads(target):
				f.o.Wake(target)
			}
		}
		if reshare {
			f.applyShare(ep)
		}
	}
	if ep.ctx.Err() == nil {
		ep.fail()
	}
}

// sameHost reports whether a view value was published by this host.
func (f *Fleet) sameHost(v []byte) bool {
	var h struct {
		Host string `json:"host"`
	}
	_ = json.Unmarshal(v, &h)
	return h.Host == f.host
}

// syncTargets starts a campaign and publishes the fingerprint for every target of this host, and
// ends those of targets it no longer serves.
func (f *Fleet) syncTargets(ep *epoch) {
	f.mu.Lock()
	want := make(map[string]string, len(f.targets))
	for n, fp := range f.targets {
		want[n] = fp
	}
	var gone []string
	for n, c := range ep.campaigns {
		if _, ok := want[n]; !ok {
			c.cancel()
			delete(ep.campaigns, n)
			gone = append(gone, n)
		}
	}
	for n := range want {
		if _, ok := ep.campaigns[n]; !ok {
			cctx, cancel := context.WithCancel(ep.ctx)
			c := &campaign{cancel: cancel}
			ep.campaigns[n] = c
			ep.wg.Add(1)
			go f.campaign(ep, n, c, cctx)
		}
	}
	f.mu.Unlock()
	ctx, cancel := f.opCtx(ep.ctx)
	defer cancel()
	for n, fp := range want {
		if e, ok := ep.mir.get(f.keys.config(n, f.host)); ok && e.val == fp {
			continue
		}
		if _, err := f.client.Put(ctx, f.keys.config(n, f.host), fp, clientv3.WithLease(ep.sess.Lease())); err != nil {
			f.failed(ep, err)
			return
		}
	}
	for _, n := range gone {
		if _, err := f.client.Txn(ctx).Then(clientv3.OpDelete(f.keys.config(n, f.host)), clientv3.OpDelete(f.keys.supply(n, f.host))).Commit(); err != nil {
			f.failed(ep, err)
			return
		}
	}
}

// campaign runs for one target until this host leads it, then holds the leadership until the
// target is removed or the epoch ends.
func (f *Fleet) campaign(ep *epoch, target string, c *campaign, ctx context.Context) {
	defer ep.wg.Done()
	e := concurrency.NewElection(ep.sess, f.keys.leader(target))
	if err := e.Campaign(ctx, f.host); err != nil {
		return
	}
	f.mu.Lock()
	c.elected, c.key, c.rev = true, e.Key(), e.Rev()
	f.mu.Unlock()
	f.log.Info("fleet: this host now reads GitHub for the target", "target", target)
	if f.o.OnLead != nil {
		f.o.OnLead(target, true)
	}
	f.o.Wake(target)
	<-ctx.Done()
	f.mu.Lock()
	c.elected = false
	f.mu.Unlock()
	if f.o.OnLead != nil {
		f.o.OnLead(target, false)
	}
	if ep.ctx.Err() == nil { // the target was removed: hand the leadership over now
		rctx, cancel := context.WithTimeout(context.Background(), f.opTO)
		_ = e.Resign(rctx)
		cancel()
	}
}

// failed notes a failed etcd request: the epoch ends and the host serves alone until it rejoins.
func (f *Fleet) failed(ep *epoch, err error) {
	if ep.ctx.Err() == nil {
		f.log.Warn("fleet: etcd request failed", "err", err)
	}
	ep.fail()
}

// opFailed is failed for a request made on a caller's behalf, under the caller's ctx. When that
// ctx ended first (a stop, or an engine pass that ran past its call timeout while the request
// governor paced its launches) the caller cut the request, not etcd: the host stays joined. Taking
// it for a lost etcd would drop the fleet's share of the GitHub ceiling and of the demand for a
// pass, so the host would launch for the whole demand with the whole ceiling.
func (f *Fleet) opFailed(ctx context.Context, ep *epoch, err error) {
	if ctx.Err() != nil {
		f.log.Debug("fleet: etcd request cut by its caller", "err", err)
		return
	}
	f.failed(ep, err)
}

// leads reports whether this host is the elected reader of target now.
func (f *Fleet) leads(target string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ep == nil {
		return false
	}
	c := f.ep.campaigns[target]
	return c != nil && c.elected
}
