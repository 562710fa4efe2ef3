package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiffNamesTheFirstLineThatDiffers(t *testing.T) {
	tests := []struct {
		name, got, want string
		says            string // "" when equal
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"changed line", "a\nx\nc\n", "a\nb\nc\n", "line 2 is\n\t\"x\"\nwant\n\t\"b\""},
		{"got shorter", "a\n", "a\nb", "line 2 is\n\t\"\"\nwant\n\t\"b\""},
		{"got longer", "a\nb\nc", "a\nb", "line 3 is\n\t\"c\"\nwant\n\t\"(end of file)\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diff([]byte(tt.got), []byte(tt.want))
			if tt.says == "" && d != "" || !strings.HasPrefix(d, tt.says) {
				t.Errorf("diff = %q, want it to start with %q", d, tt.says)
			}
		})
	}
	big := strings.Repeat("x", showWhole+1)
	if d := diff([]byte(big), []byte(big+"y")); strings.Contains(d, "--- got") {
		t.Errorf("a large mismatch shows both texts whole: %d bytes of message", len(d))
	}
}

func TestUpdateWritesTheFileAndCreatesItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "x.golden")
	Check(t, path, []byte("new\n"), true)
	if b, err := os.ReadFile(path); err != nil || string(b) != "new\n" {
		t.Fatalf("after -update: %q, %v", b, err)
	}
	Check(t, path, []byte("new\n"), false)
}

// recorder keeps the errors Check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckFailsOnAStaleFileSayingHowToRewriteIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Check(r, path, []byte("new\n"), false)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], path+" is stale: line 1 is") || !strings.Contains(r.errs[0], "-update") {
		t.Errorf("errors %q, want one naming the file, the line and -update", r.errs)
	}
}
