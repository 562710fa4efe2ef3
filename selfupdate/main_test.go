package selfupdate

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/selfupdate/selfupdatetest"
)

// fakeBins holds testdata/fakebin built once per package run, one file per behaviour.
var fakeBins string

func TestMain(m *testing.M) {
	os.Exit(selfupdatetest.Main(m, &fakeBins, "v1.2.3", "v1.2.4", "v1.2.5", "fail", "hang", "garbage"))
}

// placeBin copies fake binary variant to path (a fresh inode each time, like a package manager).
func placeBin(t *testing.T, variant, path string) {
	t.Helper()
	in := Installer{Target: path}
	if _, err := in.Replace(filepath.Join(fakeBins, variant)); err != nil {
		t.Fatal(err)
	}
}

// runsVersion asserts the binary at path answers --version with want.
func runsVersion(t *testing.T, path, want string) {
	t.Helper()
	got, err := ProbeVersion(t.Context(), nil, path, 10*time.Second)
	if err != nil {
		t.Fatalf("%s does not run: %v", path, err)
	}
	if got != want {
		t.Fatalf("%s reports %s, want %s", path, got, want)
	}
}

// fakeClock only moves when told; After registers a waiter that Advance fires.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	added   chan struct{}
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), added: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	c.added <- struct{}{}
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// awaitWaiter blocks until some goroutine called After: the watcher finished a check and sleeps.
func (c *fakeClock) awaitWaiter(t *testing.T) {
	t.Helper()
	select {
	case <-c.added:
	case <-time.After(20 * time.Second):
		t.Fatal("nothing started waiting on the clock")
	}
}

// testProbeTimeout is long enough for a loaded CI machine to start a binary and short enough for
// the cases that hang on purpose.
const testProbeTimeout = 2 * time.Second
