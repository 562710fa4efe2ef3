//go:build e2e && linux

package isolation

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

// The jobs below reach the kernel's keyrings, POSIX message queues and renameat2 through perl's
// syscall(), with this host's syscall numbers (the test's GOARCH): a shell has no other way to.
// perl missing shows as failed positive controls naming it.

// TestHostileJobLeavesNoKernelObjects runs two jobs on one slot (max_runners = 1). The first
// leaves what outlives its processes: a key in its user keyring, SysV shared memory, a semaphore
// set and a message queue (0644, readable by every local user), a POSIX message queue and a file
// in /run/lock, and opens its home (chmod 755). The second, on the same slot user, finds none of
// them and its home 0700 again; the first found its new home 0700 (issue 26 items 3 and 6).
func TestHostileJobLeavesNoKernelObjects(t *testing.T) {
	sim, cfg, d := startIsolated(t, 1)
	nonce := "rmt-kobj-" + strconv.Itoa(os.Getpid()) // plain characters: no quoting needed
	lock := "/run/lock/" + nonce
	perl := func(code string) string { return "perl -e '" + code + "'" }
	// perl's syscall() takes strings as buffers it may write: variables, never literals.
	addKey := perl(fmt.Sprintf(`my ($t, $d, $p) = ("user", "%s", "planted-secret"); exit(syscall(%d, $t, $d, $p, length $p, -4) > 0 ? 0 : 1)`, nonce, unix.SYS_ADD_KEY))
	findKey := perl(fmt.Sprintf(`my ($t, $d) = ("user", "%s"); exit(syscall(%d, 10, -4, $t, $d, 0) > 0 ? 0 : 1)`, nonce, unix.SYS_KEYCTL))
	mqOpen := func(flags, mode int) string {
		return perl(fmt.Sprintf(`my $q = "%s"; exit(syscall(%d, $q, %d, %d, 0) >= 0 ? 0 : 1)`, nonce, unix.SYS_MQ_OPEN, flags, mode))
	}
	plant := jobPrelude + fmt.Sprintf(`echo "HOMEMODE first $(stat -c %%a "$HOME")"
sees plant-key %[1]s
sees key-readable %[2]s
for kind in shm:-M4096 sem:-S1 msg:-Q; do
	id=$(ipcmk ${kind#*:} -p 0644 | sed -n 's/.* id: *//p')
	echo "IPC ${kind%%:*} $id"
done
sees plant-mq %[3]s
sees plant-lock sh -c 'echo planted > %[4]s && test -e %[4]s'
chmod 755 "$HOME"
sees open-home sh -c 'test "$(stat -c %%a "$HOME")" = 755'
`, addKey, findKey, mqOpen(unix.O_CREAT|unix.O_RDWR, 0o644), lock)
	first := queueCommand(t, sim, plant)
	planted := parseChecks(t, waitResult(t, sim, first))
	ipc := planted["IPC"]
	t.Cleanup(func() { removeLeftovers(ipc, lock, nonce) })
	planted.wantSeen(t, "plant-key", "key-readable", "plant-mq", "plant-lock", "open-home")
	if t.Failed() {
		t.Fatal("the first job could not leave its kernel objects (is perl installed? the jobs call syscall() through it), so the second job's checks would prove nothing")
	}
	for _, kind := range []string{"shm", "sem", "msg"} {
		if _, err := strconv.Atoi(ipc[kind]); err != nil {
			t.Fatalf("the first job did not make its SysV %s (ipcmk, from util-linux): %q", kind, ipc[kind])
		}
	}
	uid := planted.who(t, cfg)

	check := jobPrelude + fmt.Sprintf(`echo "HOMEMODE next $(stat -c %%a "$HOME")"
refused left-key %[1]s
refused left-shm awk -v id=%[2]s '$2 == id { f = 1 } END { exit !f }' /proc/sysvipc/shm
refused left-sem awk -v id=%[3]s '$2 == id { f = 1 } END { exit !f }' /proc/sysvipc/sem
refused left-msg awk -v id=%[4]s '$2 == id { f = 1 } END { exit !f }' /proc/sysvipc/msg
refused left-mq %[5]s
refused left-lock test -e %[6]s
sees own-key-added %[7]s
sees own-key %[1]s
`, findKey, ipc["shm"], ipc["sem"], ipc["msg"], mqOpen(unix.O_RDONLY, 0), lock, addKey)
	checked := parseChecks(t, runCommandJob(t, sim, check))
	if next := checked.who(t, cfg); next != uid {
		t.Fatalf("the second job ran as uid %d, the first as %d: not the same slot, so it proves nothing about slot hygiene", next, uid)
	}
	checked.wantRefused(t, "left-key", "left-shm", "left-sem", "left-msg", "left-mq", "left-lock")
	checked.wantSeen(t, "own-key-added", "own-key")
	if m := planted["HOMEMODE"]["first"]; m != "700" {
		t.Errorf("the slot's new home has mode %s, want 700: other slots and local users could read it", m)
	}
	if m := checked["HOMEMODE"]["next"]; m != "700" {
		t.Errorf("the first job left its home %s and the next job found it so, want 700 again at the slot's next use", m)
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}

// removeLeftovers removes, as root, what a failed run's first job left (so one failure does not
// leave objects on the host).
func removeLeftovers(ipc map[string]string, lock, mq string) {
	for kind, flag := range map[string]string{"shm": "-m", "sem": "-s", "msg": "-q"} {
		if id := ipc[kind]; id != "" {
			_ = exec.Command("ipcrm", flag, id).Run()
		}
	}
	os.Remove(lock)
	if p, err := unix.BytePtrFromString(mq); err == nil {
		_, _, _ = unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	}
}

// TestHostileSlotCannotRedirectHygiene is the swap race end to end (max_runners = 2). A job of
// slot B exchanges, as fast as it can, a directory it owns in /tmp with a link to a directory
// holding root-owned files x0..x199; meanwhile a job of slot A leaves files of the same names
// inside B's directory (200 chances per pass for the race) and files of its own, and A's slot is
// cleaned for its next job while B still races. Every root-owned file survives and A's own files
// are gone. (The 300 tries are the unit test TestRemoveOwnedIsNotRedirected in internal/runner;
// this is one instance through the daemon. The path-based hygiene before deleted 65 of the 200.)
func TestHostileSlotCannotRedirectHygiene(t *testing.T) {
	sim, cfg, d := startIsolated(t, 2)
	base := filepath.Join("/tmp", "rmt-swap-"+strconv.Itoa(os.Getpid()))
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base); os.RemoveAll(base + "-a") })
	if err := os.Chmod(base, 0o1777); err != nil { // a scratch directory, as /tmp
		t.Fatal(err)
	}
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range baits {
		if err := os.WriteFile(filepath.Join(victim, "x"+strconv.Itoa(i)), []byte("root's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Slot B: d (open to everyone) and d.link -> victim, exchanged until the test writes stop.
	race := jobPrelude + fmt.Sprintf(`cd %[1]s && mkdir -m 0777 d && chmod 0777 d && ln -s victim d.link || exit 1
echo started > ready
perl -e 'my ($a, $b, $n) = ("d", "d.link", 0); until ($n %% 1024 == 0 && (-e "stop" || time - $^T > 240)) { syscall(%[2]d, -100, $a, -100, $b, 2) == 0 or die "exchange: $!"; $n++ } syscall(%[2]d, -100, $a, -100, $b, 2) if $n %% 2; print "SWAPS $n\n"'
`, base, unix.SYS_RENAMEAT2)
	racer := queueCommand(t, sim, race)
	waitFile(t, filepath.Join(base, "ready"))
	// Slot A: its file inside B's directory (written when the name is the directory), its own.
	leave := jobPrelude + fmt.Sprintf(`n=0; while [ $n -lt %[2]d ]; do
	i=0; until { echo a > %[1]s/d/x$n; } 2>/dev/null; do i=$((i+1)); [ $i -lt 100000 ] || exit 1; done
	n=$((n+1))
done
mkdir -p %[1]s-a/sub && echo a > %[1]s-a/sub/f && ln -s %[1]s/victim/x0 %[1]s-a/link
`, base, baits)
	res := runCommandJob(t, sim, leave)
	if res.ExitCode != 0 {
		t.Fatalf("slot A's job could not leave its files: exit %d", res.ExitCode)
	}
	a := parseChecks(t, res).who(t, cfg)
	// The next job takes slot A (B's runner is busy racing): its hygiene runs during the race.
	next := parseChecks(t, runCommandJob(t, sim, jobPrelude))
	if uid := next.who(t, cfg); uid != a {
		t.Fatalf("the job after slot A's ran as uid %d, not slot A's %d: slot A was not cleaned during the race", uid, a)
	}
	if err := os.WriteFile(filepath.Join(base, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	raced := parseChecks(t, waitResult(t, sim, racer))
	if raced.who(t, cfg) == a {
		t.Fatal("the racing job ran in slot A itself")
	}
	if n, _ := strconv.Atoi(firstKey(raced["SWAPS"])); n < 1000 {
		t.Errorf("slot B exchanged its directory %d times, want thousands: the race proves little", n)
	}
	var deleted []string
	for i := range baits {
		if _, err := os.Lstat(filepath.Join(victim, "x"+strconv.Itoa(i))); err != nil {
			deleted = append(deleted, "x"+strconv.Itoa(i))
		}
	}
	if len(deleted) > 0 {
		t.Errorf("slot A's hygiene deleted %d root-owned files in %s through slot B's swapped link: %v", len(deleted), victim, deleted)
	}
	if _, err := os.Lstat(base + "-a"); err == nil {
		t.Errorf("slot A's own leftovers %s-a survived its hygiene", base)
	}
	harness.AssertNoBusyKilled(t, sim, cfg.StateDir)
	stopClean(t, sim, cfg, d)
}

// baits is how many files slot A leaves in slot B's directory, each a chance for the race.
const baits = 200

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// waitFile waits for a job to write path (a real process on a real clock, bounded).
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job wrote %s within 90s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
