package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/status"
)

// TestWebhookJobRequestCount counts, with the simulator's request counter, what one job costs a
// repository target in webhook mode once its first pass is done: jobs are delivered and run one
// after another, and the slow poll (10m) never comes within the test. The goal is at most
// 2 requests a job; the JIT registration is the one request a job needs. A count, not a timing.
func TestWebhookJobRequestCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.writeRaw(strings.ReplaceAll(e.configText(webTarget(1)), `poll_interval = "1s"`, `poll_interval = "10m"`))
	e.start()
	e.waitStatus("the first pass", func(s status.Snapshot) bool { return !target(s).LastPass.IsZero() })
	before := e.srv.Requests()
	const jobs = 3
	for range jobs {
		// A job that ends by itself: the runner reports it complete and exits, as actions/runner does.
		id, err := e.srv.QueueJob("acme/web", []string{"linux"}, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		e.waitStatus("the job's runner concluded", func(s status.Snapshot) bool {
			j, _ := e.srv.Job(id)
			return j.Status == "completed" && target(s).Owned == 0 && len(s.Runners) == 0
		})
	}
	after := e.srv.Requests()
	total := 0
	for route, n := range after {
		if d := n - before[route]; d > 0 {
			t.Logf("%s: %d (%.2f a job)", route, d, float64(d)/jobs)
			total += d
			// No full pass for a delivery (item 1 of issue 16), and no DELETE of an ephemeral
			// runner GitHub removed after its job.
			if strings.HasPrefix(route, "DELETE ") || strings.Contains(route, "/actions/runs") {
				t.Errorf("%s: %d requests for %d delivered jobs, want 0", route, d, jobs)
			}
		}
	}
	t.Logf("%d requests for %d jobs: %.2f a job", total, jobs, float64(total)/jobs)
	if total > jobs*2 {
		t.Errorf("%d requests for %d jobs (%.2f a job); the goal is at most 2 a job", total, jobs, float64(total)/jobs)
	}
}
