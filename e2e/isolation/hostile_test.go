//go:build e2e && unix

package isolation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// The hostile jobs below are ghsim command jobs: shell run by the fake runner as its slot user,
// as a workflow's `run:` step is. Each attempt that must fail prints "OK <name>" when refused and
// "HOLE <name>: <output>" when it succeeded; each positive control prints "SEES <name>" when it
// works (so a check that can never succeed is caught) and "BLIND <name>" otherwise.

// jobPrelude finds the runner's root (the directory of its run.sh: the fake runner's executable is
// <root>/bin/Runner.Listener, and it is the shell's parent) and the daemon's attempt directory
// around it, and defines refused and sees. A job that finds itself root stops at once: the checks
// then fail without writing into root's home or the host's scratch directories. What a job did not write itself goes out through printf:
// dash's echo would read backslashes in it as escapes.
const jobPrelude = `if [ "$(id -u)" -eq 0 ]; then echo "WHO 0 $HOME $USER"; echo "running as root: doing nothing" >&2; exit 1; fi
root=$(dirname "$(dirname "$(readlink /proc/$PPID/exe)")")
attempt=$(dirname "$root")
echo "ROOT $root"
echo "WHO $(id -u) $HOME $USER"
refused() { name=$1; shift; if out=$("$@" 2>&1); then printf 'HOLE %s: %s\n' "$name" "$(printf %s "$out" | head -c 200 | tr '\n' ' ')"; else echo "OK $name"; fi; }
sees() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "SEES $name"; else echo "BLIND $name"; fi; }
`

// TestHostileJobBesideAnotherRunner runs a hostile job while another runner of the same target is
// busy: it cannot read the GitHub credential, the state directory or the other runner's
// environment (which holds that runner's JIT config), and cannot write, replace or forge the
// shim's files in its attempt directory; it can read its own runner's environment and write its
// own root, _work and _diag (as actions/runner must), so the checks can tell.
func TestHostileJobBesideAnotherRunner(t *testing.T) {
	sim, cfg, d := startIsolated(t, 2)
	other, otherPID := busyBeside(t, sim, cfg)
	otherUID, _ := processUID(otherPID)

	script := jobPrelude + fmt.Sprintf(`refused read-token cat %[1]s
refused list-state-dir ls %[2]s
refused read-state-dir-file find %[2]s -type f -exec cat {} +
refused read-other-environ cat /proc/%[3]d/environ
sees own-environ grep -qa ACTIONS_RUNNER_INPUT_JITCONFIG= /proc/$PPID/environ
refused write-shim.json sh -c 'printf "{\"pid\":1,\"runner_pid\":1}" > "$1"' _ "$attempt/shim.json"
printf '{"pid":1,"runner_pid":1}' > "$root/forged.json"
refused replace-shim.json mv -f "$root/forged.json" "$attempt/shim.json"
refused remove-shim.json rm -f "$attempt/shim.json"
refused create-exit.json sh -c 'printf "{\"exit_code\":0}" > "$1"' _ "$attempt/exit.json"
refused link-exit.json ln -s /etc/passwd "$attempt/exit.json"
refused write-shim-log sh -c 'printf "forged line\n" >> "$1"' _ "$attempt/_diag/runner.log"
refused chmod-attempt-dir chmod 0777 "$attempt"
sees own-root-writable sh -c 'printf x > "$1/own-file"' _ "$root"
sees own-work-writable mkdir "$root/_work/job"
sees own-diag-writable sh -c 'printf x > "$1/_diag/Runner.log"' _ "$root"
`, shq(sim.TokenFile), shq(cfg.StateDir), otherPID)
	res := runCommandJob(t, sim, script)
	checks := parseChecks(t, res)
	checks.wantRefused(t, "read-token", "list-state-dir", "read-state-dir-file", "read-other-environ", "write-shim.json",
		"replace-shim.json", "remove-shim.json", "create-exit.json", "link-exit.json", "write-shim-log", "chmod-attempt-dir")
	checks.wantSeen(t, "own-environ", "own-root-writable", "own-work-writable", "own-diag-writable")
	uid := checks.who(t, cfg)
	if uid == otherUID {
		t.Errorf("the hostile job runs as uid %d, the same as the other busy runner (pid %d)", uid, otherPID)
	}

	if err := sim.FinishJob(other, "success", false); err != nil {
		t.Fatal(err)
	}
	sim.WaitJobsDone(t, 60*time.Second, other)
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}

// TestHostileJobLeavesNothingForTheNext runs two jobs on one slot (max_runners = 1). The first
// tries to change the cached package through its hardlinks and through the cache's own path, and
// leaves files in $HOME, /tmp, /var/tmp and /dev/shm and a background process in its own session;
// the second, on the same slot user, finds none of it and runs the pristine package.
func TestHostileJobLeavesNothingForTheNext(t *testing.T) {
	sim, cfg, d := startIsolated(t, 1)
	pkg := sim.Package
	cacheDir := filepath.Join(cfg.StateDir, "cache", pkg.Version+"-"+pkg.OS+"-"+pkg.Arch)
	nonce := "rmt-hostile-" + strconv.Itoa(os.Getpid()) // plain characters: no quoting needed
	// What the first job leaves, as shell words the second job reads again.
	left := `"$HOME/.gitconfig" /tmp/` + nonce + ` /tmp/` + nonce + `.d /var/tmp/` + nonce + ` /dev/shm/` + nonce

	plant := jobPrelude + fmt.Sprintf(`refused chmod-run.sh chmod u+w "$root/run.sh"
refused write-run.sh sh -c 'printf "echo PLANTED >&2\n" >> "$1"' _ "$root/run.sh"
refused chmod-listener chmod u+w "$root/bin/Runner.Listener"
refused write-listener sh -c 'printf PLANTED >> "$1"' _ "$root/bin/Runner.Listener"
refused write-cached-run.sh sh -c 'printf "echo PLANTED >&2\n" >> "$1"' _ %[1]s/run.sh
refused create-in-cache touch %[1]s/planted
sees replace-own-link sh -c 'rm -f "$1/run.sh" && printf "#!/bin/sh\necho PLANTED\n" > "$1/run.sh"' _ "$root"
mkdir -p /tmp/%[3]s.d/locked && touch /tmp/%[3]s.d/locked/f && chmod 0 /tmp/%[3]s.d/locked
for f in %[2]s; do [ -d "$f" ] || echo planted > "$f"; done
sees left-all sh -c 'for f in "$@"; do [ -e "$f" ] || exit 1; done' _ %[2]s
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
echo "BG $! started"
`, shq(cacheDir), left, nonce)
	check := jobPrelude + fmt.Sprintf(`i=0
for f in %[1]s; do i=$((i+1)); refused left-$i ls -ld "$f"; done
for d in /proc/[0-9]*; do [ -O "$d" ] && printf 'PROC %%s %%s %%s\n' "${d#/proc/}" "$(sed -n 's/^State:[[:space:]]*//p; s/^PPid:/ppid/p' "$d/status" | tr "\n" " ")" "$(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)"; done
sha256sum "$root/run.sh" "$root/bin/Runner.Listener" | while read -r sum path; do echo "SHA ${path#"$root"/} $sum"; done
`, left)
	var ids []int64
	for _, script := range []string{plant, check} {
		ids = append(ids, queueCommand(t, sim, script))
	}

	planted := parseChecks(t, waitResult(t, sim, ids[0]))
	planted.wantRefused(t, "chmod-run.sh", "write-run.sh", "chmod-listener", "write-listener", "write-cached-run.sh", "create-in-cache")
	planted.wantSeen(t, "replace-own-link", "left-all")
	uid := planted.who(t, cfg)
	want := pkg.FileSHA256
	for _, name := range []string{"run.sh", "bin/Runner.Listener"} {
		if got := fileHash(t, filepath.Join(cacheDir, name)); got != want[name] {
			t.Errorf("cached %s changed after a hostile job: sha256 %s, the package's is %s", name, got, want[name])
		}
	}

	checked := parseChecks(t, waitResult(t, sim, ids[1]))
	if next := checked.who(t, cfg); next != uid {
		t.Fatalf("the second job ran as uid %d, the first as %d: not the same slot, so it proves nothing about slot hygiene", next, uid)
	}
	checked.wantRefused(t, "left-1", "left-2", "left-3", "left-4", "left-5")
	listener := false
	for pid, cmd := range checked["PROC"] {
		listener = listener || strings.Contains(cmd, "Runner.Listener")
		if strings.Contains(cmd, "sleep 1000") {
			t.Errorf("the first job's background process (pid %s: %s) still runs as the slot user when the next job runs", pid, cmd)
		}
	}
	if !listener {
		t.Errorf("the second job does not see its own runner among its uid's processes, so it cannot see a leftover either: %v", checked["PROC"])
	}
	for bg := range planted["BG"] {
		if cmd, err := os.ReadFile("/proc/" + bg + "/cmdline"); err == nil && strings.Contains(string(cmd), "sleep") {
			t.Errorf("the first job's background process %s is still alive after the next job ran", bg)
		}
	}
	for _, name := range []string{"run.sh", "bin/Runner.Listener"} {
		if got := checked["SHA"][name]; got != want[name] {
			t.Errorf("the next runner's %s has sha256 %q, the package's is %s: it does not run the pristine package", name, got, want[name])
		}
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// runCommandJob queues a command job in acme/web, waits for it and returns what its command did.
func runCommandJob(t *testing.T, sim *harness.Sim, script string) ghsim.CommandResult {
	t.Helper()
	return waitResult(t, sim, queueCommand(t, sim, script))
}

// queueCommand queues a job in acme/web whose runner runs script, and returns its id.
func queueCommand(t *testing.T, sim *harness.Sim, script string) int64 {
	t.Helper()
	id, err := sim.QueueJobSpec(ghsim.JobSpec{Repo: "acme/web", Labels: []string{"e2e"}, Command: script})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func waitResult(t *testing.T, sim *harness.Sim, id int64) ghsim.CommandResult {
	t.Helper()
	sim.WaitJobsDone(t, 90*time.Second, id)
	res, ok := sim.CommandResult(id)
	if !ok {
		t.Fatalf("command job %d completed without a result: %+v", id, sim.MustJob(t, id))
	}
	t.Logf("job %d: exit %d\nstdout:\n%s\nstderr:\n%s", id, res.ExitCode, res.Stdout, res.Stderr)
	return res
}

// checks are a hostile job's report lines by kind ("OK", "HOLE", "SEES", "BLIND", "WHO", ...):
// kind -> name -> the rest of the line.
type checks map[string]map[string]string

func parseChecks(t *testing.T, res ghsim.CommandResult) checks {
	t.Helper()
	if res.Truncated || res.Error != "" {
		t.Fatalf("the job's report is incomplete: truncated %v, error %q", res.Truncated, res.Error)
	}
	c := checks{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		name, detail, _ := strings.Cut(rest, " ")
		if c[kind] == nil {
			c[kind] = map[string]string{}
		}
		c[kind][strings.TrimSuffix(name, ":")] = detail
	}
	for name, detail := range c["HOLE"] {
		t.Errorf("a hostile job could %s: %s", name, detail)
	}
	return c
}

func (c checks) wantRefused(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := c["OK"][n]; !ok {
			if _, hole := c["HOLE"][n]; !hole {
				t.Errorf("the job did not report check %s", n)
			}
		}
	}
}

func (c checks) wantSeen(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := c["SEES"][n]; !ok {
			t.Errorf("positive control %s failed: the job cannot do what a runner must, so its refusals prove nothing", n)
		}
	}
}

// who checks the job's "WHO <uid> <home> <user>" line: a slot user of this test, never root or the
// daemon's, with HOME and USER naming it; and returns the uid.
func (c checks) who(t *testing.T, cfg *harness.Config) uint32 {
	t.Helper()
	var uid uint32
	for first, rest := range c["WHO"] {
		n, err := strconv.ParseUint(first, 10, 32)
		home, user, _ := strings.Cut(rest, " ")
		if err != nil || n == 0 || int(n) == os.Geteuid() || !strings.HasPrefix(user, cfg.File.Daemon.RunnerUserPrefix) ||
			home != "/home/"+user {
			t.Errorf("the job runs as uid %s with HOME %q and USER %q; want a slot user %s<N> with its own home", first, home, user, cfg.File.Daemon.RunnerUserPrefix)
		}
		uid = uint32(n)
	}
	if len(c["WHO"]) != 1 {
		t.Fatalf("the job reported who it is %d times, want once", len(c["WHO"]))
	}
	return uid
}

// listenerPID is the pid of attempt's Runner.Listener process.
func listenerPID(t *testing.T, stateDir, attempt string) int {
	t.Helper()
	ps, err := harness.RunnerProcesses(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if harness.AttemptOfProcess(stateDir, p) == attempt && strings.Contains(p.Cmd, "Runner.Listener") {
			return p.PID
		}
	}
	t.Fatalf("no Runner.Listener process of attempt %s among %v", attempt, ps)
	return 0
}

// shq quotes s for the shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// busyBeside starts a job that runs until finished and returns it with its runner's listener pid.
func busyBeside(t *testing.T, sim *harness.Sim, cfg *harness.Config) (int64, int) {
	t.Helper()
	other, err := sim.QueueJobSpec(ghsim.JobSpec{Repo: "acme/web", Labels: []string{"e2e"}, Duration: -1})
	if err != nil {
		t.Fatal(err)
	}
	job := sim.WaitJobStatus(t, 60*time.Second, other, ghsim.StatusInProgress)
	return other, listenerPID(t, cfg.StateDir, harness.AttemptOf(job.RunnerName))
}
