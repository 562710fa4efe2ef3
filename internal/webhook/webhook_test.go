package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
	"github.com/runner-manager/runner-manager/internal/ghexamples"
)

const testSecret = "It's a Secret to Everybody"

// examples are GitHub's published workflow_job payloads (internal/ghexamples), the ground truth
// the parser is tested against.
func examples(t testing.TB) map[string][]byte {
	t.Helper()
	out := ghexamples.Webhooks()
	if len(out) == 0 {
		t.Fatal("no example payloads in internal/ghexamples")
	}
	return out
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// recorder collects what the Handler reported.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	at      []time.Time
	results []string
}

func (r *recorder) notify(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.at = append(r.at, time.Now())
}

func (r *recorder) result(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, s)
}

var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func newTestHandler(t testing.TB, rec *recorder, clk *clocktest.Clock) *Handler {
	t.Helper()
	return NewHandler(Options{Secret: staticSecret(testSecret), Notify: rec.notify, OnResult: rec.result, Now: clk.Now})
}

// staticSecret is a SecretSource that never changes (internal/secretfile's own tests cover the file).
type staticSecret string

func (s staticSecret) Secret() ([]byte, error) { return []byte(s), nil }

// delivery builds a signed JSON delivery of event kind with the given id.
func delivery(t *testing.T, url, kind, id string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", kind)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", sign(testSecret, body))
	return req
}

// want decodes the fields an Event should carry straight from the example, without go-github.
func want(t *testing.T, body []byte) Event {
	t.Helper()
	var p struct {
		Action string `json:"action"`
		Job    struct {
			ID         int64     `json:"id"`
			RunID      int64     `json:"run_id"`
			Name       string    `json:"name"`
			Labels     []string  `json:"labels"`
			Status     string    `json:"status"`
			RunnerName *string   `json:"runner_name"`
			CreatedAt  time.Time `json:"created_at"`
		} `json:"workflow_job"`
		Repo struct {
			FullName string                       `json:"full_name"`
			Owner    struct{ Login, Type string } `json:"owner"`
		} `json:"repository"`
		Org *struct{ Login string } `json:"organization"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	e := Event{Action: p.Action, Status: p.Job.Status, Repo: p.Repo.FullName, JobID: p.Job.ID, RunID: p.Job.RunID,
		JobName: p.Job.Name, Labels: p.Job.Labels, CreatedAt: p.Job.CreatedAt}
	if p.Job.RunnerName != nil {
		e.RunnerName = *p.Job.RunnerName
	}
	switch {
	case p.Org != nil:
		e.Org = p.Org.Login
	case p.Repo.Owner.Type == "Organization":
		e.Org = p.Repo.Owner.Login
	}
	return e
}

// TestExamplePayloadsNotify sends every GitHub example over real HTTP and checks that Notify gets
// the right Event quickly: the webhook exists to cut scale-up latency, so latency is asserted.
func TestExamplePayloadsNotify(t *testing.T) {
	rec, clk := &recorder{}, clocktest.New(t0)
	srv := httptest.NewServer(newTestHandler(t, rec, clk))
	defer srv.Close()
	// Warm the keep-alive connection so latency measures the delivery, not the TCP handshake.
	warm, err := srv.Client().Do(delivery(t, srv.URL, "ping", "warm-up", []byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	warm.Body.Close()
	i := 0
	var latencies []time.Duration
	for name, body := range examples(t) {
		t.Run(name, func(t *testing.T) {
			i++
			id := fmt.Sprintf("delivery-%d", i)
			start := time.Now()
			resp, err := srv.Client().Do(delivery(t, srv.URL, "workflow_job", id, body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status %d, want 202", resp.StatusCode)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.events) != i {
				t.Fatalf("Notify called %d times after %d deliveries", len(rec.events), i)
			}
			got := rec.events[i-1]
			latencies = append(latencies, rec.at[i-1].Sub(start))
			w := want(t, body)
			w.Delivery, w.At = id, t0
			if !reflect.DeepEqual(got, w) {
				t.Errorf("Event\n got %+v\nwant %+v", got, w)
			}
			if got.Action == "" || got.Repo == "" || got.JobID == 0 {
				t.Errorf("Event lacks routing fields: %+v", got)
			}
		})
	}
	// The median must be fast; the worst case gets headroom for a loaded, race-instrumented CI host.
	slices.Sort(latencies)
	if med, worst := latencies[len(latencies)/2], latencies[len(latencies)-1]; med > 50*time.Millisecond || worst > 250*time.Millisecond {
		t.Errorf("request -> Notify latency: median %v (want < 50ms), max %v (want < 250ms); all %v", med, worst, latencies)
	} else {
		t.Logf("request -> Notify latency: median %v, max %v", med, worst)
	}
}

func TestFormEncodedDeliveryIsAccepted(t *testing.T) {
	rec := &recorder{}
	h := newTestHandler(t, rec, clocktest.New(t0))
	payload := examples(t)["workflow_job.queued.json"]
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	req := delivery(t, "/webhook", "workflow_job", "form-1", body)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusAccepted || len(rec.events) != 1 || rec.events[0].JobID != want(t, payload).JobID {
		t.Fatalf("form delivery: %d %q, events %+v", w.Code, w.Body, rec.events)
	}
}

// TestRejectedDeliveries: every kind of bad request gets its 4xx and never reaches Notify.
func TestRejectedDeliveries(t *testing.T) {
	valid := examples(t)["workflow_job.queued.json"]
	huge := append(bytes.Repeat([]byte(" "), MaxBodyBytes), valid...) // valid JSON, just too big
	for _, tc := range []struct {
		name   string
		mutate func(r *http.Request)
		body   []byte
		code   int
		result string
	}{
		{"unsigned", func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") }, valid, 401, ResultUnsigned},
		{"sha1 only", func(r *http.Request) {
			r.Header.Del("X-Hub-Signature-256")
			r.Header.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
		}, valid, 401, ResultUnsigned},
		{"wrong secret", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", sign("other", valid)) }, valid, 401, ResultBadSignature},
		{"signature not hex", func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256=zz") }, valid, 401, ResultBadSignature},
		{"valid sha1 HMAC in the sha256 header", func(r *http.Request) {
			mac := hmac.New(sha1.New, []byte(testSecret))
			mac.Write(valid)
			r.Header.Set("X-Hub-Signature-256", "sha1="+hex.EncodeToString(mac.Sum(nil)))
		}, valid, 401, ResultBadSignature},
		{"body altered after signing", func(r *http.Request) {
			r.Header.Set("X-Hub-Signature-256", sign(testSecret, append([]byte(" "), valid...)))
		}, valid, 401, ResultBadSignature},
		{"oversized with length", nil, huge, 413, ResultTooLarge},
		{"oversized chunked", func(r *http.Request) { r.ContentLength = -1 }, huge, 413, ResultTooLarge},
		{"malformed JSON", nil, []byte(`{"action": "queued", "workflow_job": {`), 400, ResultMalformed},
		{"JSON of the wrong shape", nil, []byte(`{"action": "queued", "workflow_job": []}`), 400, ResultMalformed},
		{"no workflow_job", nil, []byte(`{"action": "queued", "repository": {"full_name": "a/b"}}`), 400, ResultMalformed},
		{"no repository", nil, []byte(`{"action": "queued", "workflow_job": {"id": 1}}`), 400, ResultMalformed},
		{"text/plain", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, valid, 415, ResultBadContentType},
		{"no content type", func(r *http.Request) { r.Header.Del("Content-Type") }, valid, 415, ResultBadContentType},
		{"no event header", func(r *http.Request) { r.Header.Del("X-GitHub-Event") }, valid, 400, ResultMissingHeader},
		{"no delivery header", func(r *http.Request) { r.Header.Del("X-GitHub-Delivery") }, valid, 400, ResultMissingHeader},
		{"GET", func(r *http.Request) { r.Method = http.MethodGet }, valid, 405, ResultBadMethod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			h := newTestHandler(t, rec, clocktest.New(t0))
			req := delivery(t, "/webhook", "workflow_job", "d-1", tc.body)
			if tc.mutate != nil {
				tc.mutate(req)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.code {
				t.Errorf("status %d (%q), want %d", w.Code, w.Body, tc.code)
			}
			if len(rec.events) != 0 {
				t.Errorf("Notify called for a rejected delivery: %+v", rec.events)
			}
			if !reflect.DeepEqual(rec.results, []string{tc.result}) {
				t.Errorf("results %v, want [%s]", rec.results, tc.result)
			}
			if h.seen.len() != 0 {
				t.Error("a rejected delivery was recorded as seen; its valid redelivery would be dropped")
			}
		})
	}
}

func TestDuplicateDeliveryIgnored(t *testing.T) {
	rec, clk := &recorder{}, clocktest.New(t0)
	h := newTestHandler(t, rec, clk)
	body := examples(t)["workflow_job.queued.json"]
	send := func(id string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, delivery(t, "/webhook", "workflow_job", id, body))
		return w.Code
	}
	steps := []struct {
		id      string
		advance time.Duration
		code    int
		events  int
	}{
		{"a", 0, 202, 1},
		{"a", time.Minute, 200, 1},   // GitHub retry: same id, ignored
		{"b", 0, 202, 2},             // same payload, new delivery: a new event
		{"a", 6 * time.Hour, 202, 3}, // past the TTL the id is forgotten
		{"a", 0, 200, 3},             // and remembered again
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if code := send(s.id); code != s.code || len(rec.events) != s.events {
			t.Fatalf("step %d (%s): status %d events %d, want %d and %d", i, s.id, code, len(rec.events), s.code, s.events)
		}
	}
	if !reflect.DeepEqual(rec.results, []string{"accepted", "duplicate", "accepted", "accepted", "duplicate"}) {
		t.Errorf("results %v", rec.results)
	}
}

func TestPingAndOtherEvents(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		signed bool
		code   int
		result string
	}{
		{"ping", true, 200, ResultPing},
		{"ping", false, 401, ResultUnsigned},
		{"push", true, 204, ResultIgnored},
		{"workflow_run", true, 204, ResultIgnored},
		{"not_an_event_go_github_knows", true, 204, ResultIgnored},
	} {
		rec := &recorder{}
		h := newTestHandler(t, rec, clocktest.New(t0))
		req := delivery(t, "/webhook", tc.kind, "p-1", []byte(`{"zen": "Keep it logically awesome."}`))
		if !tc.signed {
			req.Header.Del("X-Hub-Signature-256")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.code || len(rec.events) != 0 || !reflect.DeepEqual(rec.results, []string{tc.result}) {
			t.Errorf("%s signed=%v: status %d results %v events %d, want %d [%s] 0",
				tc.kind, tc.signed, w.Code, rec.results, len(rec.events), tc.code, tc.result)
		}
	}
}

func TestSeenSetIsBounded(t *testing.T) {
	s := newSeenSet(3, time.Hour)
	for i, id := range []string{"a", "b", "c", "d"} {
		if !s.add(id, t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("%s reported as seen", id)
		}
	}
	if s.len() != 3 {
		t.Fatalf("len %d, want 3", s.len())
	}
	if !s.add("a", t0.Add(5*time.Second)) {
		t.Error("oldest id a should have been evicted by d")
	}
	if s.add("d", t0.Add(6*time.Second)) {
		t.Error("d should still be remembered")
	}
}

// len is how many deliveries s remembers.
func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
