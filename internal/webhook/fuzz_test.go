package webhook

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/clocktest"
)

// FuzzHandler feeds signed arbitrary bodies: the handler must never panic, must answer one of its
// documented statuses, and must call Notify exactly when it answers 202 with a routable event.
func FuzzHandler(f *testing.F) {
	for _, body := range examples(f) {
		f.Add(body, "workflow_job", "application/json")
	}
	f.Add([]byte(`{"action":"queued","workflow_job":null,"repository":{"full_name":"a/b"}}`), "workflow_job", "application/json")
	f.Add([]byte(`payload=%7B%7D`), "workflow_job", "application/x-www-form-urlencoded")
	f.Add([]byte(`{}`), "ping", "application/json; charset=utf-8")
	rec := &recorder{}
	h := newTestHandler(f, rec, clocktest.New(t0))
	allowed := map[int]bool{200: true, 202: true, 204: true, 400: true, 413: true, 415: true}
	f.Fuzz(func(t *testing.T, body []byte, kind, contentType string) {
		rec.mu.Lock()
		before := len(rec.events)
		rec.mu.Unlock()
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-GitHub-Event", kind)
		req.Header.Set("X-GitHub-Delivery", "fuzz-"+string(rune(before)))
		req.Header.Set("X-Hub-Signature-256", sign(testSecret, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if kind == "" {
			return // missing header: 400, nothing else to check
		}
		if !allowed[w.Code] {
			t.Fatalf("status %d for a signed delivery", w.Code)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		notified := len(rec.events) > before
		if notified != (w.Code == http.StatusAccepted) {
			t.Fatalf("status %d but notified=%v", w.Code, notified)
		}
		if notified && (rec.events[before].Repo == "" || rec.events[before].Action == "") {
			t.Fatalf("notified an unroutable event %+v", rec.events[before])
		}
	})
}

// TestRejectionLogsCarryNoSecret: the warning for a refused delivery names the delivery and the
// reason, never the secret, the signature sent, or the body.
func TestRejectionLogsCarryNoSecret(t *testing.T) {
	var logs bytes.Buffer
	rec := &recorder{}
	h := newTestHandler(t, rec, clocktest.New(t0))
	h.opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	body := examples(t)["workflow_job.queued.json"]
	req := delivery(t, "/webhook", "workflow_job", "leak-1", body)
	forged := sign("attacker-guess", body)
	req.Header.Set("X-Hub-Signature-256", forged)
	h.ServeHTTP(httptest.NewRecorder(), req)
	out := logs.String()
	if !strings.Contains(out, "leak-1") || !strings.Contains(out, ResultBadSignature) {
		t.Errorf("rejection log lacks the delivery id or reason:\n%s", out)
	}
	for _, secret := range []string{testSecret, forged, strings.TrimPrefix(sign(testSecret, body), "sha256="), "octo-repo"} {
		if strings.Contains(out, secret) {
			t.Errorf("rejection log contains %q:\n%s", secret, out)
		}
	}
}

// TestRejectionLogsAreRateLimited: a flood of bad deliveries logs one line a minute per reason,
// while OnResult (the metric) sees every one.
func TestRejectionLogsAreRateLimited(t *testing.T) {
	var logs bytes.Buffer
	rec, clk := &recorder{}, clocktest.New(t0)
	h := newTestHandler(t, rec, clk)
	h.opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	body := examples(t)["workflow_job.queued.json"]
	send := func(n int) {
		for range n {
			req := delivery(t, "/webhook", "workflow_job", "flood", body)
			req.Header.Set("X-Hub-Signature-256", sign("wrong", body))
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	send(50)
	clk.Advance(59 * time.Second)
	send(10)
	if n := strings.Count(logs.String(), "webhook delivery rejected"); n != 1 {
		t.Errorf("%d rejection lines within a minute, want 1:\n%s", n, logs.String())
	}
	clk.Advance(time.Second)
	send(1)
	if n := strings.Count(logs.String(), "webhook delivery rejected"); n != 2 || !strings.Contains(logs.String(), "suppressed_since_last=59") {
		t.Errorf("after a minute: %d lines, want 2 with suppressed_since_last=59:\n%s", n, logs.String())
	}
	if len(rec.results) != 61 {
		t.Errorf("OnResult saw %d rejections, want 61", len(rec.results))
	}
}
