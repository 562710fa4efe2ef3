//go:build linux

package logging

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestJournalPriorities runs the logger on a file that JOURNAL_STREAM names, as systemd sets it
// for a service's stderr: every line starts with its level's syslog priority, no timestamp.
func TestJournalPriorities(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOURNAL_STREAM", "")
	if UnderJournal(f) {
		t.Fatal("UnderJournal without JOURNAL_STREAM")
	}
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino+1))
	if UnderJournal(f) {
		t.Fatal("UnderJournal with another inode in JOURNAL_STREAM (a child's redirected stderr)")
	}
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	if !UnderJournal(f) {
		t.Fatal("UnderJournal false for the stream JOURNAL_STREAM names")
	}
	for _, format := range []string{"auto", "json"} {
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		log := NewWith(f, Options{Level: "debug", Format: format, Journal: true}).With("target", "web")
		log.Debug("d")
		log.Info("i")
		log.Warn("w")
		log.Error("e", "token", pat)
		b, _ := os.ReadFile(f.Name())
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		want := []string{"<7>", "<6>", "<4>", "<3>"}
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d:\n%s", format, len(lines), len(want), b)
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, want[i]) || !strings.Contains(l, "web") {
				t.Errorf("%s: line %d %q: want prefix %s and the attrs", format, i, l, want[i])
			}
			if format == "auto" && (strings.Contains(l, "time") || strings.Contains(l, ":")) {
				t.Errorf("auto under the journal: line %q carries a timestamp; journald stamps lines itself", l)
			}
		}
		if strings.Contains(string(b), pat) {
			t.Errorf("%s: a token reached the journal", format)
		}
	}
}
