package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// containerWorld is the fake world whose Start checks that a container runner's name was
// journaled before it (issue 27 item 2: the intent, with the container's name, precedes create).
type containerWorld struct {
	*world
	specs []LaunchSpec
}

func (c *containerWorld) Start(ctx context.Context, spec LaunchSpec) (Process, error) {
	a, err := c.j.Get(ctx, spec.AttemptID)
	if err != nil {
		return Process{}, err
	}
	if a.Container != spec.Container {
		return Process{}, fmt.Errorf("start of %s: container %q is not the journaled %q", a.ID, spec.Container, a.Container)
	}
	c.mu.Lock()
	c.specs = append(c.specs, spec)
	c.mu.Unlock()
	p, err := c.world.Start(ctx, spec)
	p.Container = spec.Container
	return p, err
}

func TestContainerNameIsJournaledBeforeStart(t *testing.T) {
	h := newHarness(t)
	cw := &containerWorld{world: h.w}
	h.launcher = cw
	h.s = h.newSupervisor()
	ctr := with(baseTarget("c"), func(t *config.Target) {
		t.Executor, t.Image, t.Network = config.ExecutorContainer, "debian:12", "host"
	})
	h.w.setQueued("repo:acme/a", 1)
	h.w.setQueued("repo:acme/c", 1)
	h.begin(cfgOf(baseTarget("a"), ctr))
	cw.mu.Lock()
	specs := append([]LaunchSpec(nil), cw.specs...)
	cw.mu.Unlock()
	if len(specs) != 2 {
		t.Fatalf("%d starts, want one per target", len(specs))
	}
	for _, s := range specs {
		a, err := h.j.Get(context.Background(), s.AttemptID)
		if err != nil {
			t.Fatal(err)
		}
		switch a.Target {
		case "a":
			if s.Container != "" || a.Container != "" {
				t.Errorf("a host runner got container %q (journal %q)", s.Container, a.Container)
			}
		case "c":
			if s.Container != a.RunnerName || s.Target.Image != "debian:12" || a.State != journal.StateStarted {
				t.Errorf("container runner: spec container %q image %q, journal %+v", s.Container, s.Target.Image, a)
			}
		}
	}
}

// reasoned is a launch error with its own failure reason, as internal/container's are.
type reasoned struct{ reason string }

func (r reasoned) Error() string         { return r.reason + ": image debian:12 is not on this host" }
func (r reasoned) FailureReason() string { return r.reason }
func (r reasoned) Temporary() bool       { return false }

// A container launch failure is counted under its own reason (issue 27 item 4), in status and
// the observer, and the pass backs off by its class.
func TestLaunchFailureKeepsTheLaunchersReason(t *testing.T) {
	h := newHarness(t)
	obs := newCountingObserver()
	h.observer = obs
	h.s = h.newSupervisor()
	h.w.failStart = reasoned{ReasonImageMissing}
	h.w.setQueued("repo:acme/a", 1)
	h.begin(cfgOf(baseTarget("a")))
	st := h.s.Status().Targets[0]
	if st.Failures[ReasonImageMissing] != 1 || st.Failures[ReasonLaunchFailed] != 0 {
		t.Errorf("status failures %v, want one %s", st.Failures, ReasonImageMissing)
	}
	if n := obs.count(obs.failed, "a/"+ReasonImageMissing); n != 1 {
		t.Errorf("observer told of %d %s failures, want 1", n, ReasonImageMissing)
	}
	if st.Backoff != string(ClassTerminal) {
		t.Errorf("backoff %q, want %s: a missing image needs the operator", st.Backoff, ClassTerminal)
	}
}
