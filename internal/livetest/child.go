package livetest

import (
	"io"
	"os"
	"os/exec"
)

// ChildTB is TB with Cleanup, which Child needs to reap the child when the test ends.
type ChildTB interface {
	TB
	Cleanup(func())
}

// Child starts this test binary again with args and env added to the test's environment: the
// test's way of running a second process that holds a lock, writes a journal or stands in for a
// daemon. The test writes the child's stdin and reads its stdout; the child's stderr goes to the
// test's. The child is killed and reaped when the test ends, if it has not ended before; stdin
// and stdout are closed once it is reaped.
func Child(t ChildTB, env []string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find this test binary to run it again: %v", err)
	}
	cmd = exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err = cmd.StdinPipe()
	if err != nil {
		t.Fatalf("child %v: %v", args, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("child %v: %v", args, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %v: %v", args, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdin, out
}
