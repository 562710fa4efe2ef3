package selfupdate

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installFixture: a private copy running 1.2.3 and a source holding sourceVariant.
func installFixture(t *testing.T, sourceVariant string) (in *Installer, src string) {
	t.Helper()
	root := t.TempDir()
	src = filepath.Join(root, "usr-local-bin", "runner-manager")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	placeBin(t, sourceVariant, src)
	target := filepath.Join(root, "state", "bin", "runner-manager")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	placeBin(t, "v1.2.3", target)
	return &Installer{Target: target, Timeout: testProbeTimeout, Logger: slog.New(slog.DiscardHandler)}, src
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestInstallSwapsAndKeepsOld(t *testing.T) {
	in, src := installFixture(t, "v1.2.4")
	// A leftover from an earlier upgrade must go, not block or be rolled back to later.
	if err := os.WriteFile(in.Target+OldSuffix, []byte("stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := in.Install(t.Context(), Candidate{Path: src, Version: "1.2.4"}); err != nil {
		t.Fatal(err)
	}
	runsVersion(t, in.Target, "1.2.4")
	runsVersion(t, in.Target+OldSuffix, "1.2.3")
	fi, err := os.Stat(in.Target)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed mode = %v, %v; want 0755", fi.Mode(), err)
	}
	assertNoTempFiles(t, filepath.Dir(in.Target))
}

func TestInstallRollsBack(t *testing.T) {
	tests := []struct {
		name        string
		source      string // what the source holds at install time
		failingCopy bool
		errContains string
	}{
		{"copy fails half way", "v1.2.4", true, "disk full"},
		{"installed copy does not run", "fail", false, "put back"},
		{"installed copy hangs", "hang", false, "did not answer"},
		{"source changed during the drain", "v1.2.5", false, "reports 1.2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, src := installFixture(t, tt.source)
			if tt.failingCopy {
				in.copy = func(dst io.Writer, src io.Reader) error {
					if _, err := io.CopyN(dst, src, 4096); err != nil {
						return err
					}
					return errors.New("write: disk full")
				}
			}
			err := in.Install(t.Context(), Candidate{Path: src, Version: "1.2.4"})
			if err == nil || !strings.Contains(err.Error(), tt.errContains) {
				t.Fatalf("Install = %v, want an error containing %q", err, tt.errContains)
			}
			runsVersion(t, in.Target, "1.2.3") // the old binary still runs
			if _, err := os.Stat(in.Target + OldSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s%s left after a rollback (err=%v)", in.Target, OldSuffix, err)
			}
			assertNoTempFiles(t, filepath.Dir(in.Target))
		})
	}
}

func TestReplaceReplacesAtomically(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "runner-manager")
	placeBin(t, "v1.2.3", dst)
	in := Installer{Target: dst}
	if running, err := in.Replace(filepath.Join(fakeBins, "v1.2.4")); err != nil || running {
		t.Fatalf("Replace = %v, %v; want the copy in place and nothing set aside", running, err)
	}
	runsVersion(t, dst, "1.2.4")
	if _, err := in.Replace(filepath.Join(fakeBins, "missing")); err == nil {
		t.Fatal("copying a missing file succeeded")
	}
	runsVersion(t, dst, "1.2.4")
	assertNoTempFiles(t, filepath.Dir(dst))
	for _, p := range []string{dst + OldSuffix, dst + RejectedSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left beside the copy (err=%v)", p, err)
		}
	}
}
