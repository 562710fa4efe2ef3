//go:build e2e

package crash

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// The usual shape of a scenario: two repository targets whose own bounds (2 each) add up to more
// than the host's (3), so both the host-wide and the per-target bound are exercised under contention.
const (
	hostMax   = 3
	targetMax = 2
	webRepo   = "acme/web"
	apiRepo   = "acme/api"

	// jobsTimeout bounds how long the recovered daemon may take to run every job still owed.
	jobsTimeout = 2 * time.Minute
	// jobsStall bounds how long the recovered daemon may go without finishing an owed job, and
	// backlogTimeout the whole backlog a random run leaves. The pace through a backlog is the
	// request governor's (every pass reads each queued run's jobs, 1 point each, within 600
	// points a minute: docs/testing.md), so the suite asserts that the daemon keeps working
	// through it, not how fast; a stalled daemon still fails within jobsStall.
	jobsStall      = time.Minute
	backlogTimeout = 8 * time.Minute
	// deathTimeout bounds how long a crash point may take to be reached once jobs are queued.
	deathTimeout = time.Minute
	// stopTimeout bounds the final SIGTERM: nothing is left to drain by then.
	stopTimeout = 30 * time.Second
)

var labels = []string{"e2e"}

// scenario is one simulator, one config and state directory, and the daemons run on it in turn.
type scenario struct {
	t        *testing.T
	sim      *harness.Sim
	cfg      *harness.Config
	path     string
	mon      *harness.CapacityMonitor
	host     int            // daemon.max_runners
	perScope map[string]int // each repository's target max_runners
	jobs     []int64
	current  *harness.Daemon // the latest daemon started
	// replay is added to every failure this package reports (the seed of a random run).
	replay string
}

// newScenario serves repos and configures one target per repository (named after the repository)
// with max_runners perTarget, and a host bound of host.
func newScenario(t *testing.T, host, perTarget int, repos ...string) *scenario {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: repos})
	cfg := harness.NewConfig(t, sim)
	cfg.File.Daemon.MaxRunners = host
	cfg.File.Daemon.ShutdownDrainTimeout = config.Duration(3 * time.Second)
	s := &scenario{t: t, sim: sim, cfg: cfg, host: host, perScope: map[string]int{}}
	for _, r := range repos {
		cfg.Add(harness.RepoTarget(path.Base(r), r, labels, perTarget))
		s.perScope[r] = perTarget
	}
	s.path = cfg.Write(t)
	// Sampling starts before the first daemon and spans every restart.
	s.mon = harness.StartCapacityMonitor(t, sim, cfg.StateDir)
	return s
}

// start runs a daemon on the scenario's state directory. When the test fails, the cleanup registered
// here runs before the harness kills the daemon, so the dump still sees the daemon's own view.
func (s *scenario) start(env ...string) *harness.Daemon {
	s.t.Helper()
	// A runner planned at a kill keeps its slot for one call timeout (2 min by default): longer
	// than a round waits for its jobs (docs/testing.md, crash tests).
	env = append(env, "RUNNER_MANAGER_TEST_CALL_TIMEOUT=10s")
	d := harness.StartDaemon(s.t, s.path, env...)
	s.current = d
	s.t.Cleanup(func() {
		if s.t.Failed() && s.current == d {
			s.t.Logf("state at failure%s:\n%s", s.replay, s.dump(d))
		}
	})
	return d
}

// queue adds a job to repo and remembers it as owed.
func (s *scenario) queue(repo string, d time.Duration) {
	s.t.Helper()
	s.jobs = append(s.jobs, s.sim.MustQueue(s.t, repo, labels, d))
}

// expectKilled waits for d to die by a signal without its orderly stop message.
func (s *scenario) expectKilled(d *harness.Daemon, timeout time.Duration, why string) {
	s.t.Helper()
	code, out := d.Wait(s.t, timeout)
	if code != -1 || strings.Contains(out, "daemon stopped") {
		s.t.Fatalf("%s: the daemon exited with code %d, want killed by SIGKILL (-1)%s; stdout:\n%s", why, code, s.replay, out)
	}
}

// settle lets the running daemon d finish every owed job, then checks every promise and stops d.
func (s *scenario) settle(d *harness.Daemon) {
	t := s.t
	t.Helper()
	s.waitOwed()
	harness.AssertNoBusyKilled(t, s.sim, s.cfg.StateDir)
	s.assertRanOnce()
	harness.AssertNoLeaks(t, s.sim, s.cfg.StateDir)
	s.assertNoCgroups(d)
	s.assertJournalEmpty(d)
	d.Signal(syscall.SIGTERM)
	if code, out := d.Wait(t, stopTimeout); code != 0 {
		t.Fatalf("the recovered daemon exited %d on SIGTERM, want 0%s; stdout:\n%s", code, s.replay, out)
	}
	if l, err := harness.FindLeaks(s.sim, s.cfg.StateDir); err != nil || !l.Empty() {
		t.Fatalf("after the final stop (err %v)%s:\n%s", err, s.replay, l)
	}
	s.mon.Stop()
	s.mon.AssertWithin(t, s.host, s.perScope)
}

// assertNoCgroups checks that no runner cgroup of any attempt the daemons logged is left.
func (s *scenario) assertNoCgroups(d *harness.Daemon) {
	s.t.Helper()
	seen := map[string]bool{}
	for _, l := range d.Logs() {
		if l.Attempt != "" && !seen[l.Attempt] {
			seen[l.Attempt] = true
			if s.hasCgroup(l.Attempt) {
				s.t.Errorf("the runner cgroup of attempt %s is left after recovery%s", l.Attempt, s.replay)
			}
		}
	}
}

// waitOwed waits until every owed job completed, as long as one completes at least every
// jobsStall; WaitJobsDone then reports what is left.
func (s *scenario) waitOwed() {
	s.t.Helper()
	left, since := -1, time.Now()
	pollUntil(backlogTimeout, func() bool {
		n := 0
		for _, id := range s.jobs {
			if j, ok := s.sim.Job(id); !ok || j.Status != ghsim.StatusCompleted {
				n++
			}
		}
		if n != left {
			left, since = n, time.Now()
		}
		return n == 0 || time.Since(since) > jobsStall
	})
	s.sim.WaitJobsDone(s.t, harness.PollEvery, s.jobs...)
}

// assertRanOnce checks that every owed job completed with success and that exactly one runner ever
// took it (GitHub gives a job to one runner; two registrations holding it would mean a double run).
func (s *scenario) assertRanOnce() {
	s.t.Helper()
	takers := map[int64][]string{}
	for _, r := range s.sim.Registrations() {
		if r.JobID != 0 {
			takers[r.JobID] = append(takers[r.JobID], r.Name)
		}
	}
	var bad []string
	for _, id := range s.jobs {
		j := s.sim.MustJob(s.t, id)
		switch {
		case j.Status != ghsim.StatusCompleted || j.Conclusion != "success":
			bad = append(bad, fmt.Sprintf("job %d is %s/%q, want completed/success", id, j.Status, j.Conclusion))
		case len(takers[id]) != 1:
			bad = append(bad, fmt.Sprintf("job %d was taken by %d runners %v, want exactly 1", id, len(takers[id]), takers[id]))
		}
	}
	if len(bad) > 0 {
		s.t.Fatalf("jobs did not run exactly once with success%s:\n  %s", s.replay, strings.Join(bad, "\n  "))
	}
}

// assertJournalEmpty waits for the daemon to own no attempt: an attempt left in the journal after its
// runner is gone would hold a capacity slot forever.
func (s *scenario) assertJournalEmpty(d *harness.Daemon) {
	s.t.Helper()
	var left []status.Runner
	var err error
	ok := pollUntil(harness.SettleTimeout, func() bool {
		left, err = fetchRunners(d)
		return err == nil && len(left) == 0
	})
	if !ok {
		s.t.Fatalf("the daemon still owns attempts after everything settled (err %v)%s:\n%s", err, s.replay, describeRunners(left))
	}
}

func fetchRunners(d *harness.Daemon) ([]status.Runner, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return status.FetchRunners(ctx, status.SocketPath(d.StateDir))
}

func describeRunners(rs []status.Runner) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s target %s state %s id %d job %d\n", r.Name, r.Target, r.State, r.ID, r.JobID)
	}
	return b.String()
}

// dump is what a failure needs to be understood: the daemon's attempts, and the simulator's jobs,
// listed runners and registration history.
func (s *scenario) dump(d *harness.Daemon) string {
	var b strings.Builder
	if d.Exited() {
		b.WriteString("daemon attempts: (daemon not running)\n")
	} else if rs, err := fetchRunners(d); err != nil {
		fmt.Fprintf(&b, "daemon attempts: %v\n", err)
	} else {
		b.WriteString("daemon attempts (runner-manager runners):\n" + describeRunners(rs))
	}
	b.WriteString("simulator jobs:\n")
	for _, j := range s.sim.Jobs() {
		fmt.Fprintf(&b, "  %d %s %s/%s runner %s\n", j.ID, j.Repo, j.Status, j.Conclusion, j.RunnerName)
	}
	b.WriteString("simulator runners:\n")
	for _, r := range s.sim.Runners() {
		fmt.Fprintf(&b, "  %s (%d) %s %s busy=%v job %d\n", r.Name, r.ID, r.Scope, r.Status, r.Busy, r.JobID)
	}
	b.WriteString("simulator registrations:\n")
	for _, r := range s.sim.Registrations() {
		removed := "still registered"
		if !r.RemovedAt.IsZero() {
			removed = "removed by " + r.RemovedBy
		}
		fmt.Fprintf(&b, "  %s (%d) %s online=%v job %d %s\n", r.Name, r.RunnerID, r.Scope, r.Online, r.JobID, removed)
	}
	b.WriteString(s.budget() + "\n")
	live, err := harness.LiveAttempts(s.cfg.StateDir)
	fmt.Fprintf(&b, "attempts with a live process: %v (err %v)\n", slices.Sorted(maps.Keys(live)), err)
	return b.String()
}

// budget says how much of the token's REST budget the daemons used: a spent budget stalls every pass.
func (s *scenario) budget() string {
	tok, err := os.ReadFile(s.sim.TokenFile)
	if err != nil {
		return fmt.Sprintf("REST budget: %v", err)
	}
	limit, used, reset := s.sim.RateUsage(strings.TrimSpace(string(tok)))
	return fmt.Sprintf("REST budget of the token: %d of %d used, resets %s", used, limit, reset.Format(time.TimeOnly))
}

// pollUntil reports whether cond became true within timeout; it awaits real process and file events.
func pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(harness.PollEvery)
	}
}
