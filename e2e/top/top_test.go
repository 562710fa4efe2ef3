//go:build e2e

// Package top tests `runner-manager top` as a person uses it (issue 32 item 2): the real binary
// inside tmux (a private server per test), driven with send-keys and read with capture-pane, while
// the simulator runs a job through the real daemon.
package top

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/status"
)

func TestMain(m *testing.M) { harness.Main(m) }

// TestTopFollowsAJobAndResizes starts top at 80x24, watches a job go from queued to busy to
// done (the target's queue latency appears, the governor's used points count up), resizes the
// terminal to 100x30 and quits with q.
func TestTopFollowsAJobAndResizes(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("TestTopFollowsAJobAndResizes needs tmux: run make tools (apt-get install tmux)")
	}
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim).Add(harness.RepoTarget("web", "acme/web", []string{"linux"}, 2))
	d := harness.StartDaemon(t, cfg.Write(t))
	tm := startTmux(t, fmt.Sprintf("%s top --socket %s --interval 200ms", harness.Build(t), status.SocketPath(d.StateDir)))

	tm.waitFor("the target table", 24, func(s string) bool { return strings.Contains(s, "TARGET") && webRow.MatchString(s) })
	job := sim.MustQueue(t, "acme/web", []string{"linux"}, 15*time.Second)
	tm.waitFor("the runner busy with the job", 24, func(s string) bool { return strings.Contains(s, "busy 1 ") })
	sim.WaitJobsDone(t, 2*time.Minute, job)
	tm.waitFor("the job's queue latency and the points used", 24, func(s string) bool {
		m := webRow.FindStringSubmatch(s)
		return m != nil && strings.Contains(m[1], "/") && usedPoints.MatchString(s)
	})

	tm.run("resize-window", "-t", "top", "-x", "100", "-y", "30")
	tm.waitFor("a 100x30 frame", 30, func(s string) bool { return strings.Contains(s, "RECENT EVENTS") })

	tm.run("send-keys", "-t", "top", "q")
	if !harness.Poll(10*time.Second, func() bool { return exec.Command("tmux", "-L", tm.server, "has-session", "-t", "top").Run() != nil }) {
		t.Fatalf("top did not quit on q; the screen:\n%s", tm.screen())
	}
}

var (
	// webRow is the web target's row; its group is the QUEUE p50/p95 column.
	webRow     = regexp.MustCompile(`(?m)^web\s+\d+\s+\d+\s+\d+\s+\d+\s+2\s+(\S+)\s+ok`)
	usedPoints = regexp.MustCompile(`governor: [1-9]\d* of 600 points/min used`)
)

// tmux is a private tmux server (-L) running one session, "top", for the test's lifetime.
type tmux struct {
	t      *testing.T
	server string
}

func startTmux(t *testing.T, command string) *tmux {
	t.Helper()
	tm := &tmux{t: t, server: fmt.Sprintf("rmtop%d", os.Getpid())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.server, "kill-server").Run() })
	tm.run("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command)
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.server}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the pane shows now.
func (tm *tmux) screen() string {
	out, _ := exec.Command("tmux", "-L", tm.server, "capture-pane", "-p", "-t", "top").CombinedOutput()
	return string(out)
}

// waitFor waits until the screen is a whole frame of height lines (the footer on the last) and
// cond holds for it.
func (tm *tmux) waitFor(what string, height int, cond func(string) bool) {
	tm.t.Helper()
	var s string
	ok := harness.Poll(time.Minute, func() bool {
		s = tm.screen()
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		return len(lines) == height && strings.HasPrefix(lines[height-1], "q quit") && cond(s)
	})
	if !ok {
		tm.t.Fatalf("top never showed %s; the screen:\n%s", what, s)
	}
}
