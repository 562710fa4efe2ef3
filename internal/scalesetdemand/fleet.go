package scalesetdemand

import (
	"context"

	"github.com/runner-manager/runner-manager/internal/fleet"
)

// In a fleet only a scale-set target's elected leader holds its session (GitHub allows one per
// set): the listener of every other host waits for the leadership and ends its session as soon as
// the leadership is lost (docs/fleet.md, "Scale-set targets").

// Fleet is what a Source needs of the fleet (*fleet.Fleet): who holds a target's session,
// where the previous holder's session is recorded, and how much the other hosts can run.
type Fleet interface {
	Joined() bool
	Leads(target string) bool
	PublishSession(ctx context.Context, target string, rec fleet.SessionRecord)
	Session(target string) (fleet.SessionRecord, bool)
	PeerRoom(target string) int
}

// SetFleet makes the source follow the fleet's roles: only a target's leader holds its session.
// Call it before Run.
func (s *Source) SetFleet(f Fleet) { s.fleet = f }

// RolesChanged is the fleet's word that a leadership or the membership changed: each listener
// checks whether it should hold its session now.
func (s *Source) RolesChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.roles)
	s.roles = make(chan struct{})
}

func (s *Source) rolesCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roles
}

// holds says whether this host should hold target's session: alone, or as the fleet's leader.
func (s *Source) holds(target string) bool {
	return s.fleet == nil || !s.fleet.Joined() || s.fleet.Leads(target)
}

// holding waits until this host should hold st's session and returns a context that ends when it
// should no longer (false: ctx ended first).
func (s *Source) holding(ctx context.Context, st *setTarget) (context.Context, context.CancelFunc, bool) {
	name := st.t.Name
	for {
		ch := s.rolesCh()
		if s.holds(name) {
			break
		}
		st.note(func() { st.open, st.waiting, st.lastErr, st.follower = false, "", "", true })
		select {
		case <-ctx.Done():
			return nil, nil, false
		case <-ch:
		}
	}
	st.note(func() { st.follower = false })
	lctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			ch := s.rolesCh()
			if !s.holds(name) {
				cancel()
				return
			}
			select {
			case <-lctx.Done():
				return
			case <-ch:
			}
		}
	}()
	return lctx, cancel, true
}
