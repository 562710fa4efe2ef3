package fleet

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// entry is one key of the fleet as the mirror last saw it.
type entry struct {
	val         string
	create, mod int64
	lease       int64
	seen        time.Time // when the mirror got this value (the age of a view's list, Begin)
}

// mirror is this host's copy of the fleet's keys, kept by one watch, so reads (supply, views,
// leaders, fingerprints) cost no request. Decisions that must be exact still compare revisions in
// an etcd transaction (Share).
type mirror struct {
	mu      sync.Mutex
	kv      map[string]entry
	rev     int64
	changed chan struct{} // closed and replaced on every update
}

func newMirror() *mirror { return &mirror{kv: map[string]entry{}, changed: make(chan struct{})} }

// load replaces the content with a full read at its revision.
func (m *mirror) load(resp *clientv3.GetResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kv = make(map[string]entry, len(resp.Kvs))
	now := time.Now()
	for _, kv := range resp.Kvs {
		m.kv[string(kv.Key)] = entry{string(kv.Value), kv.CreateRevision, kv.ModRevision, kv.Lease, now}
	}
	m.rev = resp.Header.Revision
	m.notifyLocked()
}

// apply applies one watch response and returns the keys it changed.
func (m *mirror) apply(wr clientv3.WatchResponse) []*clientv3.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for _, ev := range wr.Events {
		k := string(ev.Kv.Key)
		if ev.Type == mvccpb.DELETE {
			delete(m.kv, k)
			continue
		}
		m.kv[k] = entry{string(ev.Kv.Value), ev.Kv.CreateRevision, ev.Kv.ModRevision, ev.Kv.Lease, now}
	}
	if wr.Header.Revision > m.rev {
		m.rev = wr.Header.Revision
	}
	m.notifyLocked()
	return wr.Events
}

func (m *mirror) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// waitRev returns once the mirror has caught up with rev, or ctx ended (false).
func (m *mirror) waitRev(ctx context.Context, rev int64) bool {
	for {
		m.mu.Lock()
		have, ch := m.rev, m.changed
		m.mu.Unlock()
		if have >= rev {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// wait returns the next change's channel.
func (m *mirror) next() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *mirror) get(key string) (entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.kv[key]
	return e, ok
}

// prefix returns the entries under p by the rest of their key, and the mirror's revision.
func (m *mirror) prefix(p string) (map[string]entry, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]entry{}
	for k, e := range m.kv {
		if rest, ok := strings.CutPrefix(k, p); ok {
			out[rest] = e
		}
	}
	return out, m.rev
}

// oldest is the entry under p created first: an election's leader.
func (m *mirror) oldest(p string) (entry, bool) {
	var best entry
	found := false
	for _, e := range m.entries(p) {
		if !found || e.create < best.create {
			best, found = e, true
		}
	}
	return best, found
}

func (m *mirror) entries(p string) []entry {
	es, _ := m.prefix(p)
	out := make([]entry, 0, len(es))
	for _, e := range es {
		out = append(out, e)
	}
	return out
}
