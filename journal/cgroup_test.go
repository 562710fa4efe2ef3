package journal

import (
	"context"
	"testing"
)

// TestRunnerCgroupIsJournaledWithTheRegisteredRecord: the cgroup a runner will run in is part of
// the registered record (written before Start creates it) and survives a restart, so recovery and
// cleanup find it after kill -9.
func TestRunnerCgroupIsJournaledWithTheRegisteredRecord(t *testing.T) {
	ctx := context.Background()
	dir, clk := t.TempDir(), newFakeClock()
	j, err := Open(dir, Options{Now: clk.Now, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	a := plan(t, j, "a")
	cg := "/sys/fs/cgroup/unified/runner-manager/runners/" + a.ID
	if _, err := j.Transition(ctx, a.ID, StateRegistered, func(x *Attempt) { x.RunnerID, x.RuntimeDir, x.Cgroup = 9, "/run/rm/"+a.ID, cg }); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = openTest(t, dir, clk)
	live, err := j.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Cgroup != cg || live[0].State != StateRegistered {
		t.Fatalf("after a restart the journal holds %+v, want the registered attempt with cgroup %s", live, cg)
	}
}
