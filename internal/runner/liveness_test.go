//go:build linux

package runner

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

func TestAliveMatchesPidAndStartTime(t *testing.T) {
	t.Parallel()
	self, err := ProcessStartTime(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("ProcessStartTime(self) = %d, %v", self, err)
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if field22 := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[19]; field22 != strconv.FormatUint(self, 10) {
		t.Fatalf("start time %d, /proc says %s", self, field22)
	}
	tests := []struct {
		name  string
		pid   int
		start uint64
		want  bool
	}{
		{"self", os.Getpid(), self, true},
		{"reused pid", os.Getpid(), self + 1, false},
		{"no such pid", 1 << 30, self, false},
	}
	for _, tt := range tests {
		if got, err := Alive(tt.pid, tt.start); got != tt.want || err != nil {
			t.Errorf("%s: Alive = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := Alive(0, self); err == nil {
		t.Error("Alive(0) gave no error")
	}
}

func TestZombieIsDead(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := ProcessStartTime(pid)
	if err != nil {
		// It may already be a zombie; its start time is still in /proc.
		info, ierr := readProcInfo(pid)
		if ierr != nil {
			t.Fatal(ierr)
		}
		start = info.startTime
	}
	// Not reaped yet: the process lingers as a zombie until Wait.
	livetest.Eventually(t, "the child to become a zombie", func() bool {
		info, err := readProcInfo(pid)
		return err == nil && info.zombie
	})
	if ok, err := Alive(pid, start); ok || err != nil {
		t.Fatalf("Alive(zombie) = %v, %v; want dead", ok, err)
	}
	if _, err := ProcessStartTime(pid); !errors.Is(err, ErrProcessNotFound) {
		t.Fatalf("ProcessStartTime(zombie) = %v, want ErrProcessNotFound", err)
	}
	if err := signalIdentified(pid, start, syscall.SIGKILL); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("signal a zombie = %v, want ErrNotRunning", err)
	}
	_ = cmd.Wait()
	if ok, err := Alive(pid, start); ok || err != nil {
		t.Fatalf("Alive(reaped) = %v, %v", ok, err)
	}
}

// A pid whose start time does not match is never signalled: it may be someone else's process.
func TestSignalRefusesReusedPid(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	start, err := ProcessStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := signalIdentified(cmd.Process.Pid, start+1, syscall.SIGKILL); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("signal with a wrong start time = %v, want ErrNotRunning", err)
	}
	if ok, _ := Alive(cmd.Process.Pid, start); !ok {
		t.Fatal("the process was signalled despite the start-time mismatch")
	}
	if err := signalIdentified(cmd.Process.Pid, start, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("sleep was not killed")
	}
}
