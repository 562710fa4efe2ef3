package ghsim

import (
	"strings"
)

// Supply is one repository's demand and the runners registered for it that hold no job, as GitHub
// sees them at one instant: what over-provisioning is measured against (e2e/fleet, the fleet
// benchmark).
type Supply struct {
	Queued   int // queued jobs of the repository
	Idle     int // its runners that connected and hold no job
	Starting int // its runners registered (JIT issued) that have not connected yet: launches in flight
}

// Over is how far the runners holding no job exceed demand + minIdle.
func (s Supply) Over(minIdle int) int { return s.Idle + s.Starting - s.Queued - minIdle }

// Supply reads the jobs and runners of repository repo ("owner/name") under one lock, so a job
// taken by a runner is never seen both queued and with its runner idle, nor neither.
func (s *Server) Supply(repo string) Supply {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Supply
	for _, j := range s.jobs {
		if j.status == StatusQueued && strings.EqualFold(j.repo.fullName(), repo) {
			out.Queued++
		}
	}
	for _, r := range s.registrations {
		switch {
		case !strings.EqualFold(r.Scope, repo) || !r.RemovedAt.IsZero() || r.JobID != 0:
		case r.Online:
			out.Idle++
		default:
			out.Starting++
		}
	}
	return out
}

// DemandReads is how many requests read demand and the runner inventory: workflow runs, their
// jobs, and runner lists (what a fleet's one reader per target saves).
func (s *Server) DemandReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for route, c := range s.requests {
		if strings.HasPrefix(route, "GET /repos/{owner}/{repo}/actions/runs") || route == "GET /repos/{owner}/{repo}/actions/runners" || route == "GET /orgs/{org}/actions/runners" {
			n += c
		}
	}
	return n
}
