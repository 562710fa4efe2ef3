package fleet

import (
	"context"
	"encoding/json"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/runner-manager/runner-manager/config"
)

// Scale-set targets in a fleet (docs/fleet.md, "Scale-set targets"). GitHub allows one message
// session per scale set, so only the target's leader holds it (internal/scalesetdemand asks Leads and
// Joined, and is told of changes through Options.OnLead and OnJoined). What the queue tells the
// leader travels in its view: the demand as for any target, plus SetNews, which followers hand to
// their scale-set source; followers register their runners through the set's JIT endpoint without
// a session. The session's id is published under session/<target> (no lease: it must outlive a
// leader killed with it open), so the next leader deletes it before creating its own instead of
// waiting for GitHub to expire it.

// SetNews is what the leader of a scale-set target learned from the queue's messages, for the
// followers: the set's id (their JIT registrations need it), the runners that started a job and
// have not completed it, and the runners whose job completed lately.
type SetNews struct {
	SetID int64    `json:"set_id"`
	Busy  []string `json:"busy,omitempty"`
	Done  []string `json:"done,omitempty"`
}

// SetSource is what the fleet needs of a scale-set demand source (internal/scalesetdemand): the
// leader's news to publish, and the leader's news heard by a follower (Options.Sets).
type SetSource interface {
	SetNews(t config.Target) SetNews
	HeardSet(t config.Target, n SetNews)
}

// SessionRecord is what session/<target> holds: the leader's message session, by id only (the
// queue token is never published).
type SessionRecord struct {
	Host      string `json:"host"`
	SetID     int64  `json:"set_id"`
	SessionID string `json:"session_id"`
}

// Leads reports whether this host is the elected reader of target now (for a scale-set target:
// the one host that holds its session).
func (f *Fleet) Leads(target string) bool { return f.leads(target) }

// Joined reports whether this host is a member of the fleet now; when it is not, it serves every
// target alone, as without a [fleet].
func (f *Fleet) Joined() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ep != nil
}

// PublishSession records the session this host, leading target, just opened; fenced on its
// election key, so a deposed leader records nothing.
func (f *Fleet) PublishSession(ctx context.Context, target string, rec SessionRecord) {
	f.mu.Lock()
	ep := f.ep
	var key string
	var rev int64
	if ep != nil {
		if c := ep.campaigns[target]; c != nil && c.elected {
			key, rev = c.key, c.rev
		}
	}
	f.mu.Unlock()
	if key == "" {
		return
	}
	rec.Host = f.host
	b, _ := json.Marshal(rec)
	octx, cancel := f.opCtx(ctx)
	defer cancel()
	resp, err := f.client.Txn(octx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpPut(f.keys.session(target), string(b))).Commit()
	if err != nil {
		f.opFailed(ctx, ep, err)
		return
	}
	if resp.Succeeded {
		f.noteWrite(resp.Header.Revision)
	}
}

// Session is the session last recorded for target by any host (the mirror's; no request).
func (f *Fleet) Session(target string) (SessionRecord, bool) {
	f.mu.Lock()
	ep := f.ep
	f.mu.Unlock()
	if ep == nil {
		return SessionRecord{}, false
	}
	e, ok := ep.mir.get(f.keys.session(target))
	if !ok {
		return SessionRecord{}, false
	}
	var rec SessionRecord
	if json.Unmarshal([]byte(e.val), &rec) != nil || rec.SessionID == "" {
		return SessionRecord{}, false
	}
	return rec, true
}

// PeerRoom is how many runners of target the other hosts have or could start now (their
// published starting, idle and free), for the leader's X-ScaleSetMaxCapacity: the service assigns
// jobs for the whole fleet, not for the leader alone.
func (f *Fleet) PeerRoom(target string) int {
	f.mu.Lock()
	ep := f.ep
	f.mu.Unlock()
	if ep == nil {
		return 0
	}
	peers, _ := f.peers(ep, target)
	n := 0
	for _, p := range peers {
		n += p.Starting + p.Idle + p.Free
	}
	return n
}
