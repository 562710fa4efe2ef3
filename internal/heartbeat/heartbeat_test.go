package heartbeat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of an empty dir: %v, want fs.ErrNotExist", err)
	}
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	want := Record{Time: now, PID: os.Getpid(), Generation: 7, Version: "1.2.3"}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Time.Equal(want.Time) || got.PID != want.PID || got.Generation != 7 || got.Version != "1.2.3" {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
	if !got.Alive() {
		t.Error("Alive() = false for this process's pid")
	}
	for _, tc := range []struct {
		at    time.Duration
		stale bool
	}{{0, false}, {StaleAfter, false}, {StaleAfter + time.Second, true}} {
		if s := got.Stale(now.Add(tc.at)); s != tc.stale {
			t.Errorf("Stale at +%s = %v, want %v", tc.at, s, tc.stale)
		}
	}
}

func TestReadCorrupt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a corrupt record: %v, want a decode error", err)
	}
}

func TestAliveNoPid(t *testing.T) {
	if (Record{}).Alive() {
		t.Error("a record without a pid reads as alive")
	}
}
