//go:build e2e

package faults

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// slowPoll is webhook.poll_interval in these tests: the poll that reconciles missed deliveries.
const slowPoll = 4 * time.Second

// startWebhookDaemon starts a daemon with a [webhook] listener and one target, and subscribes the
// listener at the simulator. It returns the delivery URL.
func startWebhookDaemon(t *testing.T) (*harness.Sim, *harness.Config, *harness.Daemon, string) {
	t.Helper()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim)
	hookURL := cfg.WithWebhook(t, slowPoll)
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	d := harness.StartDaemon(t, cfg.Write(t))
	sim.AddWebhook(hookURL, harness.WebhookSecret)
	return sim, cfg, d, hookURL
}

// deliveriesOf returns the simulator's deliveries of action for job.
func deliveriesOf(sim *harness.Sim, job int64, action string) []ghsim.Delivery {
	var out []ghsim.Delivery
	for _, d := range sim.Deliveries() {
		if d.JobID == job && d.Action == action {
			out = append(out, d)
		}
	}
	return out
}

// TestWebhookDropFallsBackToPoll: a delivered `queued` event starts a runner at once; a dropped one
// costs latency, never the job: the slower poll (webhook.poll_interval) picks it up.
func TestWebhookDropFallsBackToPoll(t *testing.T) {
	t.Parallel()
	sim, cfg, d, _ := startWebhookDaemon(t)
	// Warm the runner package cache, then measure a delivered event's pickup.
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	delivered := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	sim.WaitJobsDone(t, jobTimeout, delivered)
	if ds := deliveriesOf(sim, delivered, "queued"); len(ds) != 1 || ds[0].StatusCode != http.StatusAccepted {
		t.Fatalf("the queued delivery of job %d was not accepted: %+v", delivered, ds)
	}

	drop := sim.AddFault(ghsim.Fault{Path: "queued", Kind: ghsim.FaultWebhookDrop})
	dropped := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	sim.WaitJobsDone(t, slowPoll+jobTimeout, dropped)
	if ds := deliveriesOf(sim, dropped, "queued"); sim.FaultHits(drop) != 1 || len(ds) != 1 || !ds[0].Dropped {
		t.Fatalf("the queued delivery of job %d was not dropped (hits %d): %+v", dropped, sim.FaultHits(drop), ds)
	}
	t.Logf("pickup: delivered %s, dropped (found by the %s poll) %s",
		pickupLatency(t, sim, delivered), slowPoll, pickupLatency(t, sim, dropped))
	stopClean(t, sim, d, drainBound(cfg))
}

// TestWebhookDuplicatesRunNothingTwice: every delivery arrives twice with the same
// X-GitHub-Delivery. The second copy is recognised (200 "duplicate"), and each job gets exactly one
// runner: no extra registration, no job run twice.
func TestWebhookDuplicatesRunNothingTwice(t *testing.T) {
	t.Parallel()
	sim, cfg, d, _ := startWebhookDaemon(t)
	sim.AddFault(ghsim.Fault{Kind: ghsim.FaultWebhookDuplicate}) // every action
	jobs := queueAll(t, sim, "acme/web", 3, 300*time.Millisecond)
	sim.WaitJobsDone(t, jobTimeout, jobs...)

	for _, id := range jobs {
		ds := deliveriesOf(sim, id, "queued")
		if len(ds) != 1 || ds[0].StatusCode != http.StatusOK {
			t.Errorf("job %d: the second copy of its queued delivery was not answered 200 (duplicate ignored): %+v", id, ds)
		}
	}
	regs := sim.RegistrationsOf("acme/web")
	ran := map[int64]string{}
	for _, r := range regs {
		if r.JobID == 0 {
			continue
		}
		if other, dup := ran[r.JobID]; dup {
			t.Errorf("job %d ran on two runners: %s and %s", r.JobID, other, r.Name)
		}
		ran[r.JobID] = r.Name
	}
	if len(regs) != len(jobs) {
		t.Errorf("%d jobs with duplicated deliveries made %d registrations; want one each: %+v", len(jobs), len(regs), regs)
	}
	stopClean(t, sim, d, drainBound(cfg))
}

// TestHostileWebhookBodies: requests anyone could send to the webhook listener are refused with a
// 4xx before they reach the engine, and the daemon is unaffected: it keeps answering status, and a
// genuine delivery afterwards still starts a runner.
func TestHostileWebhookBodies(t *testing.T) {
	t.Parallel()
	sim, cfg, d, hookURL := startWebhookDaemon(t)
	valid := []byte(`{"action":"queued","workflow_job":{"id":1,"labels":["e2e"]},"repository":{"full_name":"acme/web"}}`)
	big := bytes.Repeat([]byte("A"), 2<<20)
	signed := func(body []byte) map[string]string {
		return map[string]string{"X-Hub-Signature-256": ghsim.Sign(harness.WebhookSecret, body)}
	}
	for _, tc := range []struct {
		name    string
		method  string
		body    []byte
		headers map[string]string
		noHook  bool // omit X-GitHub-Event and X-GitHub-Delivery
		chunked bool // no Content-Length: the size is only found while reading
		ctype   string
		want    int
	}{
		{name: "GET", method: http.MethodGet, want: http.StatusMethodNotAllowed},
		{name: "no GitHub headers", body: valid, headers: signed(valid), noHook: true, want: http.StatusBadRequest},
		{name: "text/plain", body: valid, headers: signed(valid), ctype: "text/plain", want: http.StatusUnsupportedMediaType},
		{name: "oversized", body: big, headers: signed(big), want: http.StatusRequestEntityTooLarge},
		{name: "oversized chunked", body: big, headers: signed(big), chunked: true, want: http.StatusRequestEntityTooLarge},
		{name: "unsigned", body: valid, want: http.StatusUnauthorized},
		{name: "bad signature", body: valid, headers: signed([]byte("something else")), want: http.StatusUnauthorized},
		{name: "sha1 signature", body: valid, headers: map[string]string{"X-Hub-Signature-256": "sha1=" + strings.Repeat("0", 40)}, want: http.StatusUnauthorized},
		{name: "signed garbage", body: []byte("{\x00not json"), headers: signed([]byte("{\x00not json")), want: http.StatusBadRequest},
		{name: "signed wrong shape", body: []byte(`{"action":5,"workflow_job":"x"}`), headers: signed([]byte(`{"action":5,"workflow_job":"x"}`)), want: http.StatusBadRequest},
		{name: "huge header", body: valid, headers: map[string]string{"X-Junk": strings.Repeat("j", 100<<10)}, want: http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length from net/http
			}
			req, err := http.NewRequest(method, hookURL, body)
			if err != nil {
				t.Fatal(err)
			}
			ctype := tc.ctype
			if ctype == "" {
				ctype = "application/json"
			}
			req.Header.Set("Content-Type", ctype)
			if !tc.noHook {
				req.Header.Set("X-GitHub-Event", "workflow_job")
				req.Header.Set("X-GitHub-Delivery", "hostile-"+strings.ReplaceAll(tc.name, " ", "-"))
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("answered %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if d.Exited() {
		t.Fatalf("the daemon exited after hostile webhook requests:\n%s", d.Stderr())
	}
	if len(d.Status(t).Runners) != 0 {
		t.Errorf("hostile requests made the daemon start runners: %+v", d.Status(t).Runners)
	}
	if strings.Contains(d.Stderr(), "panic") {
		t.Errorf("the daemon's log shows a panic:\n%s", d.Stderr())
	}
	job := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	sim.WaitJobsDone(t, jobTimeout, job)
	if ds := deliveriesOf(sim, job, "queued"); len(ds) != 1 || ds[0].StatusCode != http.StatusAccepted {
		t.Errorf("a genuine delivery after the hostile ones was not accepted: %+v", ds)
	}
	stopClean(t, sim, d, drainBound(cfg))
}
