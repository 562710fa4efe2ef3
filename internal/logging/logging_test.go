package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/redact/redacttest"
)

var (
	pat, fineGrain, install, refresh = redacttest.PAT, redacttest.FineGrained, redacttest.Install, redacttest.Refresh
	jwt, jit, pemKey                 = redacttest.JWT, redacttest.JIT, redacttest.PEMKey
	opaque                           = "c29tZSBvcGFxdWUgc2VjcmV0IHZhbHVlIHRoYXQgaGFzIG5vIHByZWZpeA" // only a sensitive key gives it away
)

var allSecrets = []string{pat, fineGrain, install, refresh, jwt, jit, "MIIEowIBAAKCAQEAu1SU1", opaque}

type creds struct {
	Name  string
	Token string
}

type stringer struct{}

func (stringer) String() string { return "stringer with " + install }

// logEverything logs every way a secret could travel into a record.
func logEverything(l *slog.Logger) {
	l = l.With("token", opaque, slog.Group("auth", "kind", "app"))
	l.Info("registered runner with "+pat,
		"jitconfig", jit,
		"encoded_jit_config", opaque,
		"err", errors.New("POST failed: Authorization: token "+fineGrain),
		slog.Group("app", "private_key", pemKey, "note", "key is "+pemKey),
		"client", creds{Name: "acme", Token: opaque},
		"list", []string{"ok", refresh},
		"who", stringer{},
		"jwt", jwt,
		"webhook_secret", opaque,
		"token_file", "/etc/runner-manager/token",
		"target", "api",
	)
	l.WithGroup("g").Warn("nested", "secret", opaque, "raw", []byte(jwt))
}

func TestLoggerRedactsEverywhere(t *testing.T) {
	for _, tc := range []struct {
		format string
		tty    bool
	}{{"json", false}, {"text", false}, {"text", true}, {"auto", false}, {"auto", true}} {
		var buf bytes.Buffer
		logEverything(NewWith(&buf, Options{Level: "debug", Format: tc.format, IsTTY: tc.tty}))
		out := buf.String()
		for _, s := range allSecrets {
			if strings.Contains(out, s) {
				t.Errorf("%s (tty %v): secret %.20q… reached the log:\n%s", tc.format, tc.tty, s, out)
			}
		}
		for _, keep := range []string{"/etc/runner-manager/token", "api", "acme", "registered runner with", redact.Redacted} {
			if !strings.Contains(out, keep) {
				t.Errorf("%s: %q missing from the log:\n%s", tc.format, keep, out)
			}
		}
	}
}

func TestNewFormatAndLevel(t *testing.T) {
	for _, tc := range []struct {
		format    string
		tty       bool
		wantJSON  bool
		wantColor bool
	}{
		{"auto", false, true, false},
		{"auto", true, false, true},
		{"json", true, true, false},
		{"text", false, false, false},
		{"text", true, false, true},
	} {
		var buf bytes.Buffer
		l := NewWith(&buf, Options{Level: "warn", Format: tc.format, IsTTY: tc.tty})
		l.Info("hidden")
		l.Warn("shown", "k", 1)
		out := buf.String()
		if strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
			t.Errorf("%s: level warn not applied: %q", tc.format, out)
		}
		if isJSON := json.Valid(bytes.TrimSpace(buf.Bytes())); isJSON != tc.wantJSON {
			t.Errorf("%s tty=%v: JSON=%v, want %v: %q", tc.format, tc.tty, isJSON, tc.wantJSON, out)
		}
		if hasColor := strings.Contains(out, "\x1b["); hasColor != tc.wantColor {
			t.Errorf("%s tty=%v: colour=%v, want %v", tc.format, tc.tty, hasColor, tc.wantColor)
		}
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "WARN": slog.LevelWarn, "error": slog.LevelError, "": slog.LevelInfo} {
		if got := ParseLevel(in); got != want {
			t.Errorf("ParseLevel(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestRecordsAreScrubbedOfKnownSecretsAndBounded: a secret-file content the Redactor was told
// is scrubbed like a shape, and a megabyte value is cut with its size noted, not logged whole.
func TestRecordsAreScrubbedOfKnownSecretsAndBounded(t *testing.T) {
	r := redact.New()
	r.Learn("webhook-secret-without-a-shape")
	var b bytes.Buffer
	log := NewWith(&b, Options{Format: "json", Redactor: r})
	huge := strings.Repeat("a", 5_242_880)
	log.Error("config rejected: webhook-secret-without-a-shape", "problem", `label "`+huge+`"`, "err", errors.New("got webhook-secret-without-a-shape"))
	out := b.String()
	if strings.Contains(out, "webhook-secret-without-a-shape") {
		t.Errorf("a known secret reached the log: %s", out)
	}
	if len(out) > 3*maxLogValue {
		t.Errorf("a 5 MB value made a %d-byte log line", len(out))
	}
	if !strings.Contains(out, "(5.2 MB, cut)") {
		t.Errorf("the cut value does not say its size: %.300s", out)
	}
}
