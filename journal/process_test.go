package journal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// The child processes below are this test binary re-executed with JOURNAL_TEST_CHILD set.
const childEnv = "JOURNAL_TEST_CHILD"

func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		return // not a child: nothing to do
	}
	dir := os.Getenv("JOURNAL_TEST_DIR")
	ctx := context.Background()
	j, err := Open(dir, Options{Logger: discardLogger()})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(2)
	}
	switch mode {
	case "hold":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold until the parent closes our stdin
		_ = j.Close()
		os.Exit(0)
	case "crash":
		// Print each write only after it is acknowledged; the parent checks every printed one survives.
		for i := 0; i < 6; i++ {
			a, err := j.Plan(ctx, PlanRequest{Target: "t" + strconv.Itoa(i%2), HostMax: 10, TargetMax: 10})
			if err != nil {
				os.Exit(3)
			}
			fmt.Printf("ack %s %s 0\n", a.ID, a.State)
			for k, to := range []State{StateRegistered, StateStarted, StateBusy}[:i%4] {
				if _, err := j.Transition(ctx, a.ID, to, func(x *Attempt) { x.RunnerID = int64(100*i + k) }); err != nil {
					os.Exit(4)
				}
				fmt.Printf("ack %s %s %d\n", a.ID, to, 100*i+k)
			}
		}
		if err := j.PutMeta(ctx, "crashloop", []byte("2")); err != nil {
			os.Exit(5)
		}
		fmt.Println("meta")
		// No Close, no flush: as hard as a crash gets (SIGKILL; TerminateProcess on Windows).
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill()
		}
		select {}
	}
	os.Exit(6)
}

func startChild(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Scanner, io.WriteCloser) {
	t.Helper()
	cmd, stdin, stdout := livetest.Child(t, []string{childEnv + "=" + mode, "JOURNAL_TEST_DIR=" + dir}, "-test.run=^TestChildProcess$")
	return cmd, bufio.NewScanner(stdout), stdin
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, out, stdin := startChild(t, "hold", dir)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("child did not open the journal: %q %v", out.Text(), out.Err())
	}
	_, err := Open(dir, Options{Logger: discardLogger()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while child holds it: %v, want ErrLocked", err)
	}
	for _, want := range []string{dir, fmt.Sprintf("pid %d", cmd.Process.Pid), "stop that runner-manager"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	j, err := Open(dir, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	_ = j.Close()
}

func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	cmd, out, _ := startChild(t, "crash", dir)
	type ack struct {
		state    State
		runnerID int64
	}
	acked := map[string]ack{}
	meta := false
	for out.Scan() {
		f := strings.Fields(out.Text())
		switch {
		case len(f) == 4 && f[0] == "ack":
			id, _ := strconv.ParseInt(f[3], 10, 64)
			acked[f[1]] = ack{State(f[2]), id}
		case len(f) == 1 && f[0] == "meta":
			meta = true
		default:
			t.Fatalf("child said %q", out.Text())
		}
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v", err)
	}
	if len(acked) != 6 || !meta {
		t.Fatalf("child acknowledged %d attempts, meta %v; want 6 and true", len(acked), meta)
	}

	j := openTest(t, dir, newFakeClock())
	ctx := context.Background()
	for id, want := range acked {
		a, err := j.Get(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged attempt %s lost: %v", id, err)
		}
		if a.State != want.state || a.RunnerID != want.runnerID {
			t.Errorf("attempt %s: state %s runner %d, want %s %d", id, a.State, a.RunnerID, want.state, want.runnerID)
		}
	}
	if live, err := j.Live(ctx); err != nil || len(live) != 6 {
		t.Fatalf("Live after crash: %d attempts, %v; want 6", len(live), err)
	}
	if v, ok, err := j.GetMeta(ctx, "crashloop"); err != nil || !ok || string(v) != "2" {
		t.Fatalf("meta after crash: %q %v %v", v, ok, err)
	}
	if _, err := j.Plan(ctx, PlanRequest{Target: "t0", HostMax: 10, TargetMax: 10}); err != nil {
		t.Fatalf("Plan after crash: %v", err)
	}
}

func TestMetaAndGitHubContact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var writes int
	j, err := Open(dir, Options{Logger: discardLogger(), OnWrite: func(d time.Duration) { writes++ }})
	if err != nil {
		t.Fatal(err)
	}
	if last, err := j.LastGitHubContact(ctx); err != nil || !last.IsZero() {
		t.Fatalf("fresh journal contact %v %v; want zero", last, err)
	}
	t1 := time.Date(2026, 12, 2, 12, 0, 0, 123, time.UTC)
	before := writes
	for _, tm := range []time.Time{t1, t1.Add(-time.Hour)} { // the older one must not move it back
		if err := j.RecordGitHubContact(ctx, "default", tm); err != nil {
			t.Fatal(err)
		}
	}
	if writes != before+1 {
		t.Fatalf("OnWrite saw %d writes for one new contact, want 1", writes-before)
	}
	if _, ok, err := j.GetMeta(ctx, "absent"); ok || err != nil {
		t.Fatalf("GetMeta(absent) = %v, %v", ok, err)
	}
	if err := j.PutMeta(ctx, "selfupdate.crashes", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutMeta(ctx, "", nil); err == nil {
		t.Fatal("PutMeta with empty name accepted")
	}
	_ = j.Close()
	j = openTest(t, dir, newFakeClock())
	if last, err := j.LastGitHubContact(ctx); err != nil || !last.Equal(t1) {
		t.Fatalf("contact after reopen %v %v; want %v", last, err, t1)
	}
	if v, ok, err := j.GetMeta(ctx, "selfupdate.crashes"); err != nil || !ok || len(v) != 1 || v[0] != 1 {
		t.Fatalf("meta after reopen %v %v %v", v, ok, err)
	}
}
