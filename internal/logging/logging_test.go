package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

var (
	pat       = "ghp_" + strings.Repeat("A1b2", 9)
	fineGrain = "github_pat_11ABCDEFG0" + strings.Repeat("x", 60)
	install   = "ghs_" + strings.Repeat("Z9", 18)
	refresh   = "ghr_" + strings.Repeat("r", 70)
	jwt       = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLWJ5dGVz"
	jit       = "eyJkLnJ1bm5lciI6IntcImFnZW50SWRcIjoxLFwiYWdlbnROYW1lXCI6XCJ4XCJ9In0=" // base64 of a JIT config
	pemKey    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----"
	opaque    = "c29tZSBvcGFxdWUgc2VjcmV0IHZhbHVlIHRoYXQgaGFzIG5vIHByZWZpeA" // only a sensitive key gives it away
)

var allSecrets = []string{pat, fineGrain, install, refresh, jwt, jit, "MIIEowIBAAKCAQEAu1SU1", opaque}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"token " + pat + " rejected", "token " + Redacted + " rejected"},
		{"pat=" + fineGrain, "pat=" + Redacted},
		{"installation " + install, "installation " + Redacted},
		{"refresh:" + refresh, "refresh:" + Redacted},
		{"gho_" + strings.Repeat("o", 36) + " ghu_" + strings.Repeat("u", 36), Redacted + " " + Redacted},
		{"jwt " + jwt + ".", "jwt " + Redacted + "."},
		{"--jitconfig " + jit, "--jitconfig " + Redacted},
		{"key:\n" + pemKey + "\ndone", "key:\n" + Redacted + "\ndone"},
		{"truncated " + pemKey[:60], "truncated " + Redacted},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Authorization: Bearer " + Redacted},
		{"GET https://user:hunter2@ghe.example.com/api", "GET https://" + Redacted + "@ghe.example.com/api"},
		{"GET https://x-access-token@ghe.example.com/api", "GET https://" + Redacted + "@ghe.example.com/api"},
		{"GET https://ghe.example.com/user@example/api", "GET https://ghe.example.com/user@example/api"},
		// Things that look a little like secrets but are not.
		{"sha256 " + strings.Repeat("ab12", 16), "sha256 " + strings.Repeat("ab12", 16)},
		{"token_file=/etc/runner-manager/token ghp_short", "token_file=/etc/runner-manager/token ghp_short"},
		{"runner 2.321.0 for acme/api", "runner 2.321.0 for acme/api"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

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
		logEverything(New(&buf, "debug", tc.format, tc.tty))
		out := buf.String()
		for _, s := range allSecrets {
			if strings.Contains(out, s) {
				t.Errorf("%s (tty %v): secret %.20q… reached the log:\n%s", tc.format, tc.tty, s, out)
			}
		}
		for _, keep := range []string{"/etc/runner-manager/token", "api", "acme", "registered runner with", Redacted} {
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
		l := New(&buf, "warn", tc.format, tc.tty)
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
