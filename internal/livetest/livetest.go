// Package livetest owns the helpers for tests that watch something running for real (a child
// process, a goroutine, a server, a file another process writes, a host tool), which no fake
// clock can drive: polling until a condition holds, a buffer the watched thing writes while the
// test reads it, a server on a loopback port, and finding a tool the test drives. The benchmark
// program polls with Poll too. Code that reads the time through an injected clock uses
// internal/clocktest or engine/enginetest instead and never polls.
package livetest

import (
	"bytes"
	"fmt"
	"sync"
	"time"
)

// TB is the part of testing.TB these helpers use; declared here so the benchmark program can use
// Poll without linking the testing package.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// patience is how long Eventually waits: long enough for a loaded machine to start a process.
const patience = 20 * time.Second

// Eventually polls cond until it holds, and fails the test naming what it waited for if it does
// not hold within 20 seconds.
func Eventually(t TB, what string, cond func() bool) {
	t.Helper()
	if err := Poll(patience, 10*time.Millisecond, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Poll calls cond every interval until it holds, or returns an error once timeout has passed.
func Poll(timeout, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		time.Sleep(interval)
	}
	return nil
}

// Buffer is an io.Writer a child or a goroutine writes while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
