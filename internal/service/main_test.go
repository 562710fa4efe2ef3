package service

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/internal/runner/runnerusertest"
	"github.com/runner-manager/runner-manager/selfupdate/selfupdatetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeBins holds selfupdate's stand-in binary built once per package run, per version.
var fakeBins string

func TestMain(m *testing.M) {
	flag.Parse()
	runnerusertest.SweepInMain()
	code := selfupdatetest.Main(m, &fakeBins, "v1.2.3", "v1.2.4", "fail")
	runnerusertest.SweepInMain()
	os.Exit(code)
}

// fakeManager records service-manager commands and answers them from replies (by command line).
type fakeManager struct {
	mu      sync.Mutex
	calls   []string
	replies map[string]string
	fail    map[string]error
}

func (f *fakeManager) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, line)
	if err := f.fail[line]; err != nil {
		return nil, err
	}
	return []byte(f.replies[line]), nil
}

func (f *fakeManager) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// testHost is a temp root with a source binary at /usr/local/bin/runner-manager.
func testHost(t *testing.T, sys System, sourceVariant string) (*Manager, *fakeManager, string) {
	t.Helper()
	root := t.TempDir()
	src := "/usr/local/bin/runner-manager"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(src)), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fakeBins, sourceVariant))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, src), b, 0o755); err != nil {
		t.Fatal(err)
	}
	fm := &fakeManager{replies: map[string]string{}, fail: map[string]error{}}
	p := DefaultPaths(sys)
	p.Root = root
	return &Manager{System: sys, Paths: p, Run: fm.run, Clock: fixedNow, Logger: slog.New(slog.DiscardHandler)}, fm, src
}
