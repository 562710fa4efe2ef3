package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/status"
)

// TestStatusAndLogsNeverShowASecret: a rejected reload's problems reach status (text, --json, the
// socket's JSON: last_reload.error and the event message) and the log, scrubbed of the token's
// shape and of the configured secret files' contents, wherever the secret was typed. Before the
// status path went through the daemon's Redactor, a token pasted as the value of token_file was
// shown verbatim by `runner-manager status` (issue 28). Every key of the schema is typed into by
// cmd/runner-manager's TestNoSecretInAnyOutput; this test covers the daemon's own outputs.
func TestStatusAndLogsNeverShowASecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := strings.TrimSpace(e.read(e.tokenFile))
	const webhookSecret = "webhook-test-secret" // newEnv's webhook.secret_file: no shape at all
	base := strings.Replace(e.configText(webTarget(1)), "[daemon]\n", "[daemon]\nreload_settle = \"100ms\"\n", 1)
	e.writeRaw(base)
	e.start()
	var last time.Time // the last reload's time: each step waits for a newer one
	for i, tc := range []struct{ key, from, to string }{
		{"github.token_file", fmt.Sprintf("token_file = %q", e.tokenFile), fmt.Sprintf("token_file = %q", token)},
		{"daemon.log_level", `log_level = "debug"`, fmt.Sprintf("log_level = %q", webhookSecret)},
		{"target.labels", `labels = ["linux"]`, fmt.Sprintf(`labels = ["a %s"]`, token)},
		{"target.name", `name = "web"`, fmt.Sprintf("name = %q", "x "+webhookSecret)},
		{"daemon.metrics_listen", fmt.Sprintf("metrics_listen = %q", e.metricsAddr), fmt.Sprintf("metrics_listen = %q", webhookSecret)},
	} {
		body := strings.Replace(base, tc.from, tc.to, 1)
		if body == base {
			t.Fatalf("%s: %q is not in the config", tc.key, tc.from)
		}
		e.writeRaw(body)
		marker := fmt.Sprintf("rejection %d", i)
		snap := e.waitStatus(marker+" ("+tc.key+")", func(s status.Snapshot) bool {
			return !s.Config.LastReload.OK && s.Config.LastReload.At.After(last)
		})
		last = snap.Config.LastReload.At
		doc, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		outputs := map[string]string{
			"the socket's JSON": string(doc),
			"status":            e.statusCLI("--socket", status.SocketPath(e.stateDir)),
			"status --json":     e.statusCLI("--json", "--socket", status.SocketPath(e.stateDir)),
			"the daemon's log":  e.read(e.logs),
		}
		for name, out := range outputs {
			for _, s := range []string{token, webhookSecret} {
				if j := strings.Index(out, s); j >= 0 {
					t.Errorf("a secret typed into %s reaches %s: %s", tc.key, name, out[max(j-100, 0):min(j+60, len(out))])
				}
			}
		}
		e.writeRaw(base) // back to good, so the next rejection is a new one
		last = e.waitStatus(marker+" fixed", func(s status.Snapshot) bool {
			return s.Config.LastReload.OK && s.Config.LastReload.At.After(last)
		}).Config.LastReload.At
	}
}

// TestHugeValueIsCutInLogAndStatus: a reload rejected for a 5 MB label logs and shows the label
// cut with its size noted, not a 5.2 MB log line and status document (issue 28).
func TestHugeValueIsCutInLogAndStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start()
	e.writeConfig(strings.Replace(webTarget(1), `labels = ["linux"]`, `labels = ["`+strings.Repeat("a", 5_242_880)+`"]`, 1))
	snap := e.waitStatus("the rejected reload", func(s status.Snapshot) bool { return !s.Config.LastReload.OK })
	doc, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"the daemon's log": e.read(e.logs), "status": string(doc)} {
		if len(out) > 64<<10 || !strings.Contains(out, "(5.2 MB, cut)") {
			t.Errorf("%s: %d bytes, want the label cut with its size noted: %.300s", name, len(out), out)
		}
	}
}
