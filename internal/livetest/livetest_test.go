package livetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollWaitsForTheConditionOrSaysHowLongItWaited(t *testing.T) {
	var calls atomic.Int32
	if err := Poll(time.Minute, time.Millisecond, func() bool { return calls.Add(1) == 3 }); err != nil {
		t.Fatalf("a condition that comes true: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("polled %d times, want 3: it stops at the first true", calls.Load())
	}
	err := Poll(30*time.Millisecond, time.Millisecond, func() bool { return false })
	if err == nil || err.Error() != "timed out after 30ms" {
		t.Errorf("a condition that never comes: %v", err)
	}
}

// TestBufferTakesConcurrentWrites is for -race: writers and a reader at once.
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 50 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 200 {
		t.Errorf("%d lines, want 200", n)
	}
}

// fatalTB records a Fatalf and ends its goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestToolFailsSayingHowToInstall: a missing tool fails the test, never skips it, and says what
// to run.
func TestToolFailsSayingHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Tool(f, "promtool", "run `make tools`")
		t.Error("Tool returned for a tool that is not on PATH")
	}()
	<-done
	if want := "promtool is not on PATH and this test needs it: run `make tools`"; f.msg != want {
		t.Errorf("failure %q, want %q", f.msg, want)
	}
}

func TestServeHandsOverALoopbackListenerAndStopReturnsItsEnd(t *testing.T) {
	ended := errors.New("served until cancelled")
	var got net.Listener
	addr, stop := Serve(t, func(ctx context.Context, ln net.Listener) error {
		got = ln
		<-ctx.Done()
		return ended
	})
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("address %q, want loopback", addr)
	}
	if err := stop(); err != ended || stop() != ended {
		t.Errorf("stop = %v, want serve's own error, every time", err)
	}
	if got.Addr().String() != addr {
		t.Errorf("serve got %v, want the listener at %s", got.Addr(), addr)
	}
	got.Close()
}

// TestChildEcho is the child of TestChildPipesStdinAndStdout: it echoes its first line of stdin
// with the value it was given in its environment.
func TestChildEcho(t *testing.T) {
	v := os.Getenv("LIVETEST_CHILD")
	if v == "" {
		return // not a child
	}
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Printf("%s %s", v, line)
	os.Exit(0)
}

func TestChildPipesStdinAndStdout(t *testing.T) {
	cmd, stdin, stdout := Child(t, []string{"LIVETEST_CHILD=echo"}, "-test.run=^TestChildEcho$")
	fmt.Fprintln(stdin, "hello")
	got, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || got != "echo hello\n" {
		t.Fatalf("child wrote %q, %v; want %q", got, err, "echo hello\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v", err)
	}
}
