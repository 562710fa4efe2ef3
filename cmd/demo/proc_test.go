package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestChildLogsAndStops(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	ready := make(chan struct{})
	var lines []string
	c, err := startChild("the sleeper", "sh", []string{"-c", "echo hello; echo oops >&2; echo ready now; exec sleep 30"}, log, func(l string) {
		lines = append(lines, l)
		if l == "ready now" {
			close(ready)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.await(context.Background(), ready, 10*time.Second, "ready"); err != nil {
		t.Fatal(err)
	}
	if err := c.stop(syscall.SIGTERM, 10*time.Second); err == nil || strings.Contains(err.Error(), "killed") {
		t.Errorf("a child ending on SIGTERM reports its exit (signal), not a kill: %v", err)
	}
	data, _ := os.ReadFile(log)
	for _, want := range []string{"hello", "oops", "ready now"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log lacks %q:\n%s", want, data)
		}
	}
	if strings.Join(lines, "|") != "hello|ready now" {
		t.Errorf("watched stdout lines = %q", lines)
	}
}

func TestChildStopKillsAfterGrace(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	ready := make(chan struct{})
	c, err := startChild("the stubborn one", "sh", []string{"-c", "trap '' TERM; echo up; while :; do sleep 1; done"}, log, func(l string) {
		if l == "up" {
			close(ready)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.await(context.Background(), ready, 10*time.Second, "up"); err != nil {
		t.Fatal(err)
	}
	err = c.stop(syscall.SIGTERM, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("stop of a child ignoring SIGTERM = %v, want a kill after the grace period", err)
	}
	if !c.exited() {
		t.Error("the child must have exited")
	}
}

func TestChildAwaitReportsAnEarlyExit(t *testing.T) {
	c, err := startChild("the quitter", "sh", []string{"-c", "exit 3"}, filepath.Join(t.TempDir(), "log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.await(context.Background(), make(chan struct{}), 10*time.Second, "ready")
	if err == nil || !strings.Contains(err.Error(), "exited before ready") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("await = %v, want the early exit and its status", err)
	}
	if _, err := startChild("nothing", filepath.Join(t.TempDir(), "missing"), nil, filepath.Join(t.TempDir(), "log"), nil); err == nil {
		t.Error("starting a missing binary must fail")
	}
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "daemon.log")
	if got := logTail(log, 2); !strings.Contains(got, "is empty") {
		t.Errorf("missing log: %q", got)
	}
	if err := os.WriteFile(log, []byte("one\ntwo\nno usable GitHub credential\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := logTail(log, 2)
	if !strings.HasSuffix(got, "\n    two\n    no usable GitHub credential") || strings.Contains(got, "one") {
		t.Errorf("logTail = %q, want the last two lines, indented", got)
	}
}
