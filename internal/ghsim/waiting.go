package ghsim

import "fmt"

// ApproveJob releases a job JobSpec.Waiting held, as an approval of its environment does: it
// becomes queued, with a queued delivery, and is offered to runners and scale sets from then on.
// A job that is not waiting is an error.
func (s *Server) ApproveJob(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return errUnknown("job", fmt.Sprint(id))
	}
	if j.status != StatusWaiting {
		return fmt.Errorf("ghsim: job %d is %s, not waiting for approval", id, j.status)
	}
	j.status = StatusQueued
	if ru := s.runs[j.runID]; ru != nil {
		ru.updatedAt = s.now()
	}
	s.queueWebhook(j, "queued")
	s.routeJob(j)
	return nil
}
