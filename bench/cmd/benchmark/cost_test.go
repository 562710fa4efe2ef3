package main

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/status"
)

// TestFirstPassDoneWaitsForEveryTargetsPass: a cost run's window opens only once status shows a
// pass of every target ended, not while the first pass is still reading (its in-progress reads
// were counted as the jobs' cost when the window opened on the queued reads alone).
func TestFirstPassDoneWaitsForEveryTargetsPass(t *testing.T) {
	dir, err := os.MkdirTemp("", "bfp") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if firstPassDone(dir) {
		t.Fatal("first pass done with no daemon answering")
	}
	ln, err := status.Listen(t.Context(), status.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var snap atomic.Pointer[status.Snapshot]
	snap.Store(&status.Snapshot{})
	src := status.SourceFunc(func(context.Context) (status.Snapshot, error) { return *snap.Load(), nil })
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- ln.Serve(ctx, src, nil) }()
	t.Cleanup(func() { cancel(); <-served })

	steps := []struct {
		targets []status.Target
		want    bool
	}{
		{nil, false}, // no target loaded yet
		{[]status.Target{{Name: "org"}}, false},
		{[]status.Target{{Name: "org", LastPass: time.Now()}, {Name: "web"}}, false},
		{[]status.Target{{Name: "org", LastPass: time.Now()}, {Name: "web", LastPass: time.Now()}}, true},
	}
	for i, s := range steps {
		snap.Store(&status.Snapshot{Targets: s.targets})
		if got := firstPassDone(dir); got != s.want {
			t.Errorf("step %d (%d targets): firstPassDone = %v, want %v", i, len(s.targets), got, s.want)
		}
	}
}
