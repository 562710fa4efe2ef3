//go:build e2e

package container

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// prelude defines refused and sees, as e2e/isolation's hostile jobs do: a check that must fail
// prints "OK <name>" when refused and "HOLE <name>: <output>" when it succeeded; a positive
// control prints "SEES <name>" when it works, so a check that can never succeed is caught.
const prelude = `refused() { name=$1; shift; if out=$("$@" 2>&1); then printf 'HOLE %s: %s\n' "$name" "$(printf %s "$out" | head -c 200 | tr '\n' ' ')"; else echo "OK $name"; fi; }
sees() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "SEES $name"; else echo "BLIND $name"; fi; }
`

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestHostileJobInAContainer: a job in a container, beside another runner's busy container,
// cannot read the host's state directory or credential, reach the host's Docker socket (neither
// the Engine's own nor the usual paths), or read the other container's environment (which holds
// its JIT config); it can read its own runner's environment and write its own _work and _diag,
// so the refusals prove something (issue 27 items 3 and 6).
func TestHostileJobInAContainer(t *testing.T) {
	w := newWorld(t, 2, nil)
	d := w.start()
	other := w.busyJob()
	otherPID := strings.TrimSpace(w.docker.Docker(t, "inspect", "--format", "{{.State.Pid}}", w.running(t)))

	script := prelude + fmt.Sprintf(`refused read-token cat %[1]s
refused list-state-dir ls %[2]s
refused reach-engine-socket test -e %[3]s
refused reach-docker-sock test -e /var/run/docker.sock
refused reach-run-docker-sock test -e /run/docker.sock
refused read-other-environ-by-host-pid cat /proc/%[4]s/environ
refused see-two-jit-configs sh -c 'for f in /proc/[0-9]*/environ; do tr "\0" "\n" < "$f" 2>/dev/null | grep "^ACTIONS_RUNNER_INPUT_JITCONFIG="; done | sort -u | wc -l | grep -qv "^ *[01]$"'
refused become-root sh -c 'test "$(id -u)" = 0'
sees own-environ grep -qa ACTIONS_RUNNER_INPUT_JITCONFIG= /proc/$PPID/environ
sees own-work-writable mkdir /actions-runner/_work/hostile
sees own-diag-writable sh -c 'printf x > /actions-runner/_diag/hostile'
`, shq(w.sim.TokenFile), shq(w.cfg.StateDir), shq(w.docker.Socket), otherPID)
	id, err := w.sim.QueueJobSpec(ghsim.JobSpec{Repo: repo, Labels: labels, Command: script})
	if err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobsDone(t, 90*time.Second, id)
	res, ok := w.sim.CommandResult(id)
	if !ok || res.Truncated || res.Error != "" {
		t.Fatalf("the job's report is incomplete: %+v (%v)", res, ok)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
	for _, want := range []string{"read-token", "list-state-dir", "reach-engine-socket", "reach-docker-sock", "reach-run-docker-sock",
		"read-other-environ-by-host-pid", "see-two-jit-configs", "become-root"} {
		if !strings.Contains(res.Stdout, "OK "+want+"\n") {
			t.Errorf("check %s: not refused", want)
		}
	}
	for _, want := range []string{"own-environ", "own-work-writable", "own-diag-writable"} {
		if !strings.Contains(res.Stdout, "SEES "+want+"\n") {
			t.Errorf("positive control %s failed: the job cannot do what a runner must, so its refusals prove nothing", want)
		}
	}
	if err := w.sim.FinishJob(other, "success", false); err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobsDone(t, time.Minute, other)
	w.waitNoContainers(time.Minute)
	w.stopClean(d)
}

// TestJobPastMemoryMaxInAContainer: a job that allocates far more than memory_max is killed
// inside its container; the attempt ends with failure reason out_of_memory in status, read from
// the container's inspected state (issue 27 items 1 and 6).
func TestJobPastMemoryMaxInAContainer(t *testing.T) {
	w := newWorld(t, 1, func(tg *config.Target) { tg.MemoryMax = 64 << 20 })
	d := w.start()
	// The shell holds a command substitution's whole output in memory: 512 MiB of it.
	id, err := w.sim.QueueJobSpec(ghsim.JobSpec{Repo: repo, Labels: labels, Command: `big=$(head -c 536870912 /dev/zero | tr '\0' x); echo "HOLE allocated: ${#big} bytes"`})
	if err != nil {
		t.Fatal(err)
	}
	w.sim.WaitJobsDone(t, 90*time.Second, id)
	if res, _ := w.sim.CommandResult(id); strings.Contains(res.Stdout, "HOLE") {
		t.Errorf("the job allocated past memory_max 64MiB: %q", res.Stdout)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		for _, ts := range d.Status(t).Targets {
			if ts.Name == "web" {
				n = ts.Failures["out_of_memory"]
			}
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no out_of_memory failure in status within 60s: %+v", d.Status(t).Targets)
		}
		time.Sleep(500 * time.Millisecond)
	}
	w.waitNoContainers(time.Minute)
	w.stopClean(d)
}
