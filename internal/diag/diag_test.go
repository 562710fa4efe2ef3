package diag

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// runtimeDir lays out an attempt's runtime directory as the shim and the runner leave it: the
// shim's log in _diag, the runner's logs in runner/_diag.
func runtimeDir(t *testing.T, runnerFiles map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"_diag", "runner/_diag"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "_diag", "runner.log"), "shim: runner exited with status 1\n")
	for name, content := range runnerFiles {
		write(t, filepath.Join(dir, "runner", "_diag", name), content)
	}
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func keep(t *testing.T, root, dir, id string, r *redact.Redactor) Attempt {
	t.Helper()
	a, err := Keep(root, dir, Attempt{ID: id, Target: "web", Runner: "rm-web-1", KeptAt: time.Now()}, r)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func contents(t *testing.T, root, id string) map[string]string {
	t.Helper()
	a, data, err := Read(root, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, f := range a.Files {
		out[f.Name] = string(data[i])
	}
	return out
}

func TestKeepCopiesShimAndRunnerLogs(t *testing.T) {
	root := filepath.Join(t.TempDir(), DirName)
	dir := runtimeDir(t, map[string]string{"Runner_20261206-030000-utc.log": "[RUNNER] listening for jobs\n"})
	keep(t, root, dir, "a1", nil)
	got := contents(t, root, "a1")
	if got["shim/runner.log"] != "shim: runner exited with status 1\n" || got["runner/Runner_20261206-030000-utc.log"] != "[RUNNER] listening for jobs\n" {
		t.Fatalf("kept %q", got)
	}
	for _, p := range []string{root, filepath.Join(root, "a1")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", p, fi.Mode().Perm(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "a1", storedName(0))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kept file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestKeepFollowsNoLink: a job plants links in its _diag (and replaces _diag itself by a link) to
// files it cannot read; nothing of them is kept, and each is named as skipped.
func TestKeepFollowsNoLink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	write(t, secret, "ROOT-ONLY-SECRET\n")
	root := filepath.Join(t.TempDir(), DirName)

	dir := runtimeDir(t, map[string]string{"Worker.log": "ok\n"})
	if err := os.Symlink(secret, filepath.Join(dir, "runner", "_diag", "steal.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "runner", "_diag", "hard.log")); err != nil {
		t.Fatal(err)
	}
	want := []string{"runner/steal.log: a symbolic link: not followed", "runner/hard.log: a hard link: not read"}
	if mkfifo(t, filepath.Join(dir, "runner", "_diag", "fifo.log")) {
		want = append(want, "runner/fifo.log: not a regular file")
	}
	a := keep(t, root, dir, "a1", nil)
	for name, data := range contents(t, root, "a1") {
		if strings.Contains(data, "ROOT-ONLY-SECRET") {
			t.Fatalf("%s kept the linked file's content", name)
		}
	}
	skipped := strings.Join(a.Skipped, "\n")
	for _, want := range want {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped %q lacks %q", skipped, want)
		}
	}

	// _diag itself replaced by a link to the secret's directory.
	dir = runtimeDir(t, nil)
	if err := os.RemoveAll(filepath.Join(dir, "runner", "_diag")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "runner", "_diag")); err != nil {
		t.Fatal(err)
	}
	a = keep(t, root, dir, "a2", nil)
	if got := contents(t, root, "a2"); len(got) != 1 || got["shim/runner.log"] == "" {
		t.Fatalf("with _diag a link, kept %v; want the shim's log only", got)
	}
	if !strings.Contains(strings.Join(a.Skipped, "\n"), "runner/_diag: not a directory (a link?)") {
		t.Errorf("skipped %q does not name the linked _diag", a.Skipped)
	}
}

func TestKeepRedacts(t *testing.T) {
	r := redact.New()
	r.Learn("s3cret-webhook-value")
	root := filepath.Join(t.TempDir(), DirName)
	dir := runtimeDir(t, map[string]string{"Worker.log": "env WEBHOOK=s3cret-webhook-value token ghp_" + strings.Repeat("a", 36) + "\n"})
	keep(t, root, dir, "a1", r)
	got := contents(t, root, "a1")["runner/Worker.log"]
	if strings.Contains(got, "s3cret-webhook-value") || strings.Contains(got, "ghp_aaaa") || !strings.Contains(got, redact.Redacted) {
		t.Fatalf("kept %q; want the configured secret and the token shape redacted", got)
	}
}

func TestKeepCaps(t *testing.T) {
	root := filepath.Join(t.TempDir(), DirName)
	big := strings.Repeat("x", FileCap) + "THE END\n"
	files := map[string]string{"a-big.log": big}
	for i := range MaxFiles + 3 {
		files[fmt.Sprintf("b-%02d.log", i)] = strings.Repeat("y", FileCap/2)
	}
	a := keep(t, root, runtimeDir(t, files), "a1", nil)
	got := contents(t, root, "a1")
	if kept := got["runner/a-big.log"]; len(kept) != FileCap || !strings.HasSuffix(kept, "THE END\n") {
		t.Fatalf("a file over FileCap kept %d bytes (suffix %q); want its last %d", len(kept), kept[max(0, len(kept)-8):], FileCap)
	}
	var total int
	for _, d := range got {
		total += len(d)
	}
	if total > AttemptCap || len(a.Files) > MaxFiles {
		t.Fatalf("kept %d bytes in %d files; caps %d bytes, %d files", total, len(a.Files), AttemptCap, MaxFiles)
	}
	if a.Files[1].Dropped != int64(len(big)-FileCap) {
		t.Errorf("dropped %d of the big file, want %d", a.Files[1].Dropped, len(big)-FileCap)
	}
	if !strings.Contains(strings.Join(a.Skipped, "\n"), "over the attempt's cap") {
		t.Errorf("skipped %q does not say what the cap cut", a.Skipped)
	}
}

// TestPruneDropsOldestFirst: past MaxAttempts (or TotalCap) the oldest kept attempts go.
func TestPruneDropsOldestFirst(t *testing.T) {
	root := filepath.Join(t.TempDir(), DirName)
	dir := runtimeDir(t, nil)
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i := range MaxAttempts + 2 {
		if _, err := Keep(root, dir, Attempt{ID: fmt.Sprintf("a%03d", i), KeptAt: start.Add(time.Duration(i) * time.Minute)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != MaxAttempts || kept[0].ID != fmt.Sprintf("a%03d", MaxAttempts+1) || kept[len(kept)-1].ID != "a002" {
		t.Fatalf("kept %d attempts, newest %s, oldest %s; want %d, a%03d .. a002", len(kept), kept[0].ID, kept[len(kept)-1].ID, MaxAttempts, MaxAttempts+1)
	}

	// By size: three attempts of 3 files at FileCap each exceed TotalCap only when there are
	// more than TotalCap/(3*FileCap) of them.
	root = filepath.Join(t.TempDir(), DirName)
	files := map[string]string{}
	for i := range 3 {
		files[fmt.Sprintf("%d.log", i)] = strings.Repeat("z", FileCap)
	}
	dir = runtimeDir(t, files)
	n := TotalCap/(3*FileCap) + 2
	for i := range n {
		if _, err := Keep(root, dir, Attempt{ID: fmt.Sprintf("s%02d", i), KeptAt: start.Add(time.Duration(i) * time.Minute)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	kept, _ = List(root)
	var total int64
	for _, a := range kept {
		for _, f := range a.Files {
			total += f.Size
		}
	}
	if total > TotalCap || len(kept) >= n || kept[0].ID != fmt.Sprintf("s%02d", n-1) {
		t.Fatalf("kept %d attempts (%d bytes), newest %s; want under %d bytes, the newest kept", len(kept), total, kept[0].ID, TotalCap)
	}
}

func TestReadRefusesAPath(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"../etc", "a/b", "..", ""} {
		if _, _, err := Read(root, id); err == nil || !strings.Contains(err.Error(), "is not an attempt id") {
			t.Errorf("Read(%q) = %v, want a refusal", id, err)
		}
	}
	if _, _, err := Read(root, "nope"); err == nil || !bytes.Contains([]byte(err.Error()), []byte(ErrNotKept.Error())) {
		t.Errorf("Read of an attempt never kept = %v", err)
	}
}
