package webhook

import (
	"container/list"
	"sync"
	"time"
)

// seenSet remembers delivery ids for ttl, at most max of them, oldest evicted first. GitHub
// retries and manual redeliveries reuse the id, so this is what turns them into no-ops.
type seenSet struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	order *list.List // of seenEntry, oldest first
	byID  map[string]*list.Element
}

type seenEntry struct {
	id string
	at time.Time
}

func newSeenSet(max int, ttl time.Duration) *seenSet {
	return &seenSet{max: max, ttl: ttl, order: list.New(), byID: make(map[string]*list.Element, max)}
}

// add records id as seen at now and reports whether it was new (not seen within ttl).
func (s *seenSet) add(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for front := s.order.Front(); front != nil && now.Sub(front.Value.(seenEntry).at) >= s.ttl; front = s.order.Front() {
		s.remove(front)
	}
	if _, ok := s.byID[id]; ok {
		return false
	}
	for s.order.Len() >= s.max {
		s.remove(s.order.Front())
	}
	s.byID[id] = s.order.PushBack(seenEntry{id: id, at: now})
	return true
}

func (s *seenSet) remove(e *list.Element) {
	delete(s.byID, e.Value.(seenEntry).id)
	s.order.Remove(e)
}
