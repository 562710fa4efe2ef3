package webhook

import (
	"slices"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/clocktest"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// simRig is the simulator delivering to a real Server over 127.0.0.1.
type simRig struct {
	sim    *ghsim.Server
	events chan Event
	rec    *recorder
}

func newSimRig(t *testing.T) *simRig {
	t.Helper()
	sim := ghsimtest.Start(t, ghsim.Options{})
	sim.CreateOrg("acme")
	sim.CreateRepo("acme", "api")

	r := &simRig{sim: sim, events: make(chan Event, 16), rec: &recorder{}}
	h := newTestHandler(t, r.rec, clocktest.New(t0))
	h.opts.Notify = func(e Event) { r.rec.notify(e); r.events <- e }

	addr, stop := livetest.Serve(t, (&Server{Path: "/webhook", Handler: h}).Serve)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	sim.AddWebhook("http://"+addr+"/webhook", testSecret)
	return r
}

func (r *simRig) queue(t *testing.T) int64 {
	t.Helper()
	id, err := r.sim.QueueJob("acme/api", []string{"self-hosted", "linux"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// next waits for the next Notify; the simulator delivers over real HTTP, so this is a deadline,
// not a sleep.
func (r *simRig) next(t *testing.T) Event {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no webhook delivery reached Notify within 5s")
		return Event{}
	}
}

func TestSimulatorDeliveries(t *testing.T) {
	r := newSimRig(t)
	targets := []config.Target{{Name: "api", Repository: "acme/api", Labels: []string{"linux"}}}

	id := r.queue(t)
	e := r.next(t)
	if e.Action != "queued" || e.Repo != "acme/api" || e.Org != "acme" || e.JobID != id ||
		!slices.Equal(e.Labels, []string{"self-hosted", "linux"}) || e.Delivery == "" {
		t.Errorf("event from the simulator: %+v", e)
	}
	if got := Route(e, targets); !slices.Equal(got, []string{"api"}) {
		t.Errorf("Route = %v, want [api]", got)
	}

	// GitHub may deliver twice with the same X-GitHub-Delivery: one wake only.
	r.sim.AddFault(ghsim.Fault{Kind: ghsim.FaultWebhookDuplicate, Path: "queued", Count: 1})
	dupID := r.queue(t)
	if e := r.next(t); e.JobID != dupID {
		t.Fatalf("event for job %d, want %d", e.JobID, dupID)
	}

	// A dropped delivery never arrives. Deliveries are sent in order, so once the next job's
	// event is here the dropped one can no longer come; the poll is what recovers that job.
	r.sim.AddFault(ghsim.Fault{Kind: ghsim.FaultWebhookDrop, Path: "queued", Count: 1})
	dropped := r.queue(t)
	after := r.queue(t)
	if e := r.next(t); e.JobID != after {
		t.Fatalf("event for job %d after the drop, want %d (the dropped job is %d)", e.JobID, after, dropped)
	}

	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	if len(r.rec.events) != 3 {
		t.Errorf("Notify called %d times, want 3 (first, duplicate once, after the drop)", len(r.rec.events))
	}
	if !slices.Equal(r.rec.results, []string{ResultAccepted, ResultAccepted, ResultDuplicate, ResultAccepted}) {
		t.Errorf("results %v", r.rec.results)
	}
	var sawDrop, sawDup bool
	for _, d := range r.sim.Deliveries() {
		sawDrop = sawDrop || (d.JobID == dropped && d.Dropped)
		sawDup = sawDup || (d.JobID == dupID && d.StatusCode != 0)
	}
	if !sawDrop || !sawDup {
		t.Errorf("simulator deliveries do not show the faults: %+v", r.sim.Deliveries())
	}
}

// TestSimulatorEnterpriseDelivery: a delivery of a repository whose organisation belongs to an
// enterprise names the enterprise, and reaches that enterprise's target.
func TestSimulatorEnterpriseDelivery(t *testing.T) {
	r := newSimRig(t)
	r.sim.AddEnterprise("acme-corp", "acme")
	r.queue(t)
	e := r.next(t)
	if e.Enterprise != "acme-corp" {
		t.Fatalf("event from the simulator: %+v, want enterprise acme-corp", e)
	}
	targets := []config.Target{{Name: "ent", Enterprise: "acme-corp", Labels: []string{"linux"}}}
	if got := Route(e, targets); !slices.Equal(got, []string{"ent"}) {
		t.Errorf("Route = %v, want [ent]", got)
	}
}
