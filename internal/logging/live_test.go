package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestLiveSwitchesLevelAndFormatForDerivedLoggers(t *testing.T) {
	var buf bytes.Buffer
	live := NewLiveWith(&buf, Options{Level: "info", Format: "json"})
	derived := live.Logger().With("target", "api").WithGroup("g")
	derived.Debug("hidden at info")
	derived.Info("as json", "token", pat)
	line := strings.TrimSpace(buf.String())
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["target"] != "api" || strings.Contains(line, "hidden") {
		t.Fatalf("before Set: want one JSON record with target=api, got %q (%v)", line, err)
	}
	if strings.Contains(line, pat) {
		t.Fatalf("secret reached the log: %s", line)
	}
	buf.Reset()
	live.Set("debug", "text")
	derived.Debug("shown at debug", "token", pat)
	out := buf.String()
	if !strings.Contains(out, "shown at debug") || !strings.Contains(out, "target=api") || strings.HasPrefix(out, "{") {
		t.Fatalf("after Set(debug, text): want a text record with target=api, got %q", out)
	}
	if strings.Contains(out, pat) {
		t.Fatalf("secret reached the log after Set: %s", out)
	}
	buf.Reset()
	live.Set("error", "json")
	derived.Warn("hidden at error")
	if buf.Len() != 0 {
		t.Fatalf("warn at level error was written: %q", buf.String())
	}
}
