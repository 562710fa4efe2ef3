package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
