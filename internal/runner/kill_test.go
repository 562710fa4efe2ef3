//go:build linux

package runner

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// childrenOf lists pid's children with their start times (the fake runner's sleep).
func childrenOf(t *testing.T, pid int) []Handle {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []Handle
	for _, f := range strings.Fields(string(data)) {
		c, _ := strconv.Atoi(f)
		if st, err := ProcessStartTime(c); err == nil {
			out = append(out, Handle{PID: c, StartTime: st})
		}
	}
	if len(out) == 0 {
		t.Fatalf("runner %d has no child: the test cannot see its group killed", pid)
	}
	return out
}

// Kill ends the runner at once, whatever it traps, and the shim still records the exit and kills
// what the runner left in its process group (the fake runner's sleep).
func TestKillEndsTheRunnerAndItsGroup(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "k1", nil)
	child := childrenOf(t, r.st.RunnerPID)
	if err := r.l.Kill(context.Background(), r.h, r.dir); err != nil {
		t.Fatal(err)
	}
	exit := waitExit(t, r.dir)
	if exit.Signal != "SIGKILL" || exit.StopRequested {
		t.Fatalf("exit = %+v, want killed by SIGKILL without a stop ask", exit)
	}
	livetest.Eventually(t, "the shim to exit", func() bool { ok, _ := Alive(r.h.PID, r.h.StartTime); return !ok })
	for _, c := range child {
		livetest.Eventually(t, "the runner's child "+strconv.Itoa(c.PID)+" to be killed with its group", func() bool {
			ok, _ := Alive(c.PID, c.StartTime)
			return !ok
		})
	}
	if strings.Contains(readLog(t, r.dir), "runner: got TERM") {
		t.Error("the runner got SIGTERM: Kill must not ask, only end")
	}
}

// Kill refuses a directory outside the runtime root and a shim that is not the journaled one.
func TestKillRefusesWhatItCannotVouchFor(t *testing.T) {
	t.Parallel()
	r := startWaitingRunner(t, "k2", nil)
	if err := r.l.Kill(context.Background(), r.h, t.TempDir()); err == nil {
		t.Fatal("Kill outside the runtime root succeeded")
	}
	other := r.h
	other.StartTime++
	if err := r.l.Kill(context.Background(), other, r.dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Kill with another shim's identity = %v, want ErrNotRunning", err)
	}
	if ok, _ := Alive(r.st.RunnerPID, r.st.RunnerStartTime); !ok {
		t.Fatal("a refused Kill killed the runner")
	}
	r.stop(t)
}
