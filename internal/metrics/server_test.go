package metrics

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/livetest"
)

// TestLiveScrapePassesPromtool serves the endpoint on 127.0.0.1, scrapes it over real HTTP and
// pipes the scrape into `promtool check metrics` (installed by `make tools`). A missing promtool is
// a failure, because the check is an acceptance criterion.
func TestLiveScrapePassesPromtool(t *testing.T) {
	m := New("1.2.3")
	m.ConfigReload(true, 1, t0)
	m.SetRunners("web", map[string]int{"busy": 1})
	m.ObserveGitHubRequest(DefaultAccount, "GET /repos/{owner}/{repo}/actions/runs", 200, time.Millisecond)
	m.ObserveScaleUp("web", StageQueuedToStarted, time.Second)
	m.ObserveReconcile("web", time.Millisecond, nil)
	m.SetRateLimitSource(func() map[string]map[string]RateLimit {
		return map[string]map[string]RateLimit{DefaultAccount: {"core": {Limit: 5000, Remaining: 10, Reset: t0}}}
	})
	m.ObserveJournalWrite(time.Millisecond)
	m.WebhookDelivery("accepted")
	m.InitTargets([]string{"web", "infra"})
	m.SetTargetSource(func() []TargetGauges {
		return []TargetGauges{{Name: "web", MaxRunners: 2, Demand: 1}, {Name: "infra", MaxRunners: 1}}
	})
	m.TargetContact("web", t0)

	body := scrape(t, m)
	for _, want := range []string{"runner_manager_runners{", "runner_manager_build_info{", "go_goroutines ", "process_start_time_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}

	cmd := exec.CommandContext(t.Context(), needPromtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// scrape starts ServeListener, fetches Path once, then stops the server and checks it returned cleanly.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	addr, stop := livetest.Serve(t, func(ctx context.Context, ln net.Listener) error { return m.ServeListener(ctx, ln, nil) })
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("ServeListener after cancel: %v", err)
		}
	}()
	resp, err := http.Get("http://" + addr + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return string(b)
}

func TestOnlyGETMetricsIsServed(t *testing.T) {
	addr, stop := livetest.Serve(t, func(ctx context.Context, ln net.Listener) error { return New("test").ServeListener(ctx, ln, nil) })
	defer stop()
	base := "http://" + addr
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"POST", Path, http.StatusMethodNotAllowed}, {"GET", "/", http.StatusNotFound}, {"GET", "/debug/pprof/", http.StatusNotFound}} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, bytes.NewReader(nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}
