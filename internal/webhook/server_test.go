package webhook

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/clocktest"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

func TestServerServesPathAndStops(t *testing.T) {
	rec := &recorder{}
	h := newTestHandler(t, rec, clocktest.New(t0))
	addr, stop := livetest.Serve(t, (&Server{Path: "/github/webhook", Handler: h}).Serve)

	base := "http://" + addr
	body := examples(t)["workflow_job.queued.json"]
	for _, tc := range []struct {
		path string
		code int
	}{{"/github/webhook", http.StatusAccepted}, {"/", http.StatusNotFound}, {"/metrics", http.StatusNotFound}} {
		resp, err := http.DefaultClient.Do(delivery(t, base+tc.path, "workflow_job", "s-"+tc.path, body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("POST %s = %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
	rec.mu.Lock()
	if len(rec.events) != 1 {
		t.Errorf("events %d, want 1", len(rec.events))
	}
	rec.mu.Unlock()
	if err := stop(); err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("listener still accepting after Serve returned")
	}
}

func TestServerRefusesBadConfig(t *testing.T) {
	h := http.NotFoundHandler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = (&Server{Path: "webhook", Handler: h}).Serve(t.Context(), ln)
	if err == nil || !strings.Contains(err.Error(), "must start with /") {
		t.Errorf("relative path: %v", err)
	}
}
