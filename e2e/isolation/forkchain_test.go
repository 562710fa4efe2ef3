//go:build e2e && unix

package isolation

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// forkChain is issue 26's first hole: a process in a session of its own that forks its successor
// and exits every 2 ms, so a scan of /proc never finds one pid alive long enough to kill. Each
// generation touches its heartbeat file ($1) first: whether the chain lives is then a file that
// comes back after it is removed, not a pid a scan must catch.
const forkChain = `: > "$1"; sleep 0.002; sh -c "$0" "$0" "$1" &`

// TestForkChainIsGoneBeforeTheSlotsNextJob: a job leaves a fork chain; before the slot's next job
// starts it must be gone, in both ways the daemon ends a runner's leftovers: by the runner's
// cgroup, and (a host without usable cgroups: the daemon runs in a mount namespace where
// /sys/fs/cgroup is an empty tmpfs) by its slot's uid. The chain reads nothing: it only has to be
// alive for the next job's secrets to be in reach, which is what the next job checks.
func TestForkChainIsGoneBeforeTheSlotsNextJob(t *testing.T) {
	for _, mode := range []struct {
		name    string
		cgroups bool
	}{{"cgroup", true}, {"no-cgroups", false}} {
		t.Run(mode.name, func(t *testing.T) {
			var o harness.DaemonOptions
			if !mode.cgroups {
				o.Bin = withoutCgroups(t)
			}
			sim, cfg, d := startIsolatedWith(t, 1, o, nil)
			iso := d.Status(t).Isolation
			if iso == nil || iso.Cgroups != mode.cgroups || (!mode.cgroups && iso.NoCgroups == "") {
				t.Fatalf("status isolation = %+v, want cgroups %v (a host without them says why)", iso, mode.cgroups)
			}
			heartbeat := fmt.Sprintf("/tmp/rmt-chain-%d-%s", os.Getpid(), mode.name)
			// beats: remove the heartbeat, give a live chain 200 ms (dozens of generations) to
			// write it again.
			const beats = `beats() { rm -f "$1"; sleep 0.2; [ -e "$1" ]; }
`
			plant := jobPrelude + beats + fmt.Sprintf(`setsid sh -c %[1]s %[1]s %[2]s </dev/null >/dev/null 2>&1 &
sees chain-running beats %[2]s
`, shq(forkChain), shq(heartbeat))
			check := jobPrelude + beats + fmt.Sprintf(`refused chain-alive beats %[1]s
sees own-listener grep -qs 'Runner[.]Listener' /proc/$PPID/cmdline
`, shq(heartbeat))
			var ids []int64
			for _, script := range []string{plant, check} {
				ids = append(ids, queueCommand(t, sim, script))
			}
			planted := parseChecks(t, waitResult(t, sim, ids[0]))
			uid := planted.who(t, cfg)
			t.Cleanup(func() { endUID(uid); os.Remove(heartbeat) }) // a chain must not outlive the test, nor its user
			planted.wantSeen(t, "chain-running")

			checked := parseChecks(t, waitResult(t, sim, ids[1]))
			if next := checked.who(t, cfg); next != uid {
				t.Fatalf("the second job ran as uid %d, the first as %d: not the same slot, so it proves nothing about slot hygiene", next, uid)
			}
			checked.wantRefused(t, "chain-alive")
			checked.wantSeen(t, "own-listener")
			os.Remove(heartbeat)
			time.Sleep(200 * time.Millisecond) // a live chain writes it again within milliseconds
			if _, err := os.Lstat(heartbeat); err == nil {
				t.Errorf("the fork chain is still alive after the slot's next job: it wrote %s again", heartbeat)
			}
			harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
			stopClean(t, sim, cfg, d)
		})
	}
}

// withoutCgroups writes a wrapper that starts the daemon in a mount namespace of its own with an
// empty tmpfs over /sys/fs/cgroup: the daemon sees no cgroup hierarchy (mountinfo still lists the
// hidden ones) and must fall back to ending runners by uid.
func withoutCgroups(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("this test needs unshare(1) (util-linux) to run the daemon without cgroups: install util-linux")
	}
	wrapper := filepath.Join(t.TempDir(), "runner-manager-without-cgroups")
	script := "#!/bin/sh\nexec unshare --mount --propagation private /bin/sh -c 'mount -t tmpfs no-cgroups /sys/fs/cgroup && exec \"$0\" \"$@\"' " +
		shq(harness.Build(t)) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// endUID kills every process of uid the way the daemon's fallback does, as that uid, so a chain a
// failing run left does not outlive the test.
func endUID(uid uint32) {
	for range 20 {
		cmd := exec.Command("/bin/sh", "-c", "kill -KILL -1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		_ = cmd.Run()
	}
}
