package secretfile

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile keeps the mode of an existing file
		t.Fatal(err)
	}
}

func TestOpenRefusesUnusableFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		errContains   string
	}{
		{"missing", "", 0, "does not exist"},
		{"empty", "\n", 0o600, "is empty"},
		{"world-readable", "s3cret", 0o644, "readable by every user"},
		{"group-writable", "s3cret", 0o660, "writable by its group"},
		{"world-writable", "s3cret", 0o602, "writable by its group or by every user"},
	} {
		path := filepath.Join(dir, tc.name)
		if tc.mode != 0 {
			writeFile(t, path, tc.content, tc.mode)
		}
		_, err := Open("webhook.secret_file", path, nil)
		if err == nil || !strings.Contains(err.Error(), tc.errContains) {
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.errContains)
		}
		if err != nil && tc.content != "" && strings.Contains(err.Error(), tc.content) {
			t.Errorf("%s: the error leaks the secret: %v", tc.name, err)
		}
	}
}

// TestOpenAppliesValidateRule: the daemon accepts what validate accepts. A group-readable file is a
// warning of config.CheckSecretFile, so it is used (and the warning logged), not refused.
func TestOpenAppliesValidateRule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	writeFile(t, path, "s3cret", 0o640)
	var logs bytes.Buffer
	f, err := Open("webhook.secret_file", path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("a group-readable secret (a validate warning) is refused: %v", err)
	}
	if got, _ := f.Secret(); string(got) != "s3cret" {
		t.Fatalf("Secret() = %q", got)
	}
	if !strings.Contains(logs.String(), "readable by its group") || strings.Contains(logs.String(), "s3cret") {
		t.Errorf("want the warning logged without the secret:\n%s", logs.String())
	}
}

// TestFileFollowsRotation: an atomic rename and an in-place edit are both picked up on the
// next delivery; a broken file keeps the previous secret and is logged once, without its content.
func TestFileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	writeFile(t, path, "first\n", 0o600)
	var logs bytes.Buffer
	s, err := Open("webhook.secret_file", path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	check := func(step, want string) {
		t.Helper()
		got, err := s.Secret()
		if err != nil || string(got) != want {
			t.Fatalf("%s: Secret() = %q, %v; want %q", step, got, err, want)
		}
	}
	check("initial", "first")

	tmp := filepath.Join(dir, "secret.new")
	writeFile(t, tmp, "second\r\n", 0o600)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	check("after atomic rename", "second")

	writeFile(t, path, "third-and-longer", 0o600)
	check("after in-place edit", "third-and-longer")

	writeFile(t, path, "", 0o600)
	check("after emptying", "third-and-longer")
	check("still empty", "third-and-longer")
	if n := strings.Count(logs.String(), "cannot be used"); n != 1 {
		t.Errorf("broken secret logged %d times, want once:\n%s", n, logs.String())
	}
	writeFile(t, path, "fourth", 0o600)
	check("after repair", "fourth")
	for _, secret := range []string{"first", "second", "third-and-longer", "fourth"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log contains secret %q:\n%s", secret, logs.String())
		}
	}
}
