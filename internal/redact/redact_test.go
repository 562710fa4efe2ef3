package redact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n-----END RSA PRIVATE KEY-----"

func TestStringScrubsShapesAndKnownSecrets(t *testing.T) {
	r := New()
	r.Learn("  s3cret-webhook-value\n", "short", "line-one-of-a-file\nline-two-of-a-file\n", "API_KEY=\"env-file-value-1234\"\nDEBUG=1\n", `q"uote<&>-secret`)
	for _, tc := range []struct{ name, in, want string }{
		{"classic token", "token_file ghp_abcdefghijklmnopqrstuvwxyz0123456789 missing", "token_file <redacted> missing"},
		{"fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijkl", "<redacted>"},
		{"pem", "key: " + pem + " end", "key: <redacted> end"},
		{"jwt", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2ln", "<redacted>"},
		{"url userinfo", "https://user:pw@github.example/api/v3", "https://<redacted>@github.example/api/v3"},
		{"known secret", `label "s3cret-webhook-value" is bad`, `label "<redacted>" is bad`},
		{"a line of a known file", "got line-two-of-a-file here", "got <redacted> here"},
		{"below the minimum length", "a short value", "a short value"},
		{"an environment file's value", "got env-file-value-1234 DEBUG=1", "got <redacted> DEBUG=1"},
		{"quoted by %q", `got "q\"uote<&>-secret"`, `got "<redacted>"`},
		{"in JSON", `{"m":"q\"uote\u003c\u0026\u003e-secret"}`, `{"m":"<redacted>"}`},
		{"quoted, then in JSON", `{"m":"got \"q\\\"uote\u003c\u0026\u003e-secret\""}`, `{"m":"got \"<redacted>\""}`},
		{"a cut secret", `"xs3cret-web` + CutMark + `" (1.2 kB, cut)`, `"x<redacted>` + CutMark + `" (1.2 kB, cut)`},
		{"a cut too short to tell", `"s3cret` + CutMark + `"`, `"s3cret` + CutMark + `"`},
		{"nothing", "max_runners must be at least 1 (got 0)", "max_runners must be at least 1 (got 0)"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
	var none *Redactor
	if got := none.String("ghp_abcdefghijklmnopqrstuvwxyz0123456789 s3cret-webhook-value"); got != "<redacted> s3cret-webhook-value" {
		t.Errorf("a nil Redactor scrubs shapes only: got %q", got)
	}
}

func TestLearnFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("plain-token-without-shape\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := New()
	r.LearnFile(path)
	r.LearnFile(filepath.Join(dir, "missing")) // teaches nothing, reports nothing
	r.LearnFile(dir)                           // a directory is not read
	if got := r.String("x plain-token-without-shape y"); got != "x <redacted> y" {
		t.Errorf("got %q", got)
	}
}

func TestWriterScrubsEachWrite(t *testing.T) {
	r := New()
	var buf bytes.Buffer
	w := r.Writer(&buf)
	r.Learn("learned-after-the-writer-was-made")
	n, err := w.Write([]byte("one learned-after-the-writer-was-made\n"))
	if err != nil || n != len("one learned-after-the-writer-was-made\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if buf.String() != "one <redacted>\n" {
		t.Errorf("got %q", buf.String())
	}
	if Unwrap(r.Writer(w)) != &buf {
		t.Error("Unwrap does not reach the writer underneath")
	}
}

func TestValueScrubsEveryString(t *testing.T) {
	type event struct{ Message string }
	type doc struct {
		Error  string
		Events []event
		Count  int
	}
	r := New()
	r.Learn("typed-secret-value")
	got, err := Value(r, doc{Error: "bad typed-secret-value", Events: []event{{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := doc{Error: "bad <redacted>", Events: []event{{"<redacted>"}}, Count: 3}
	if got.Error != want.Error || got.Events[0] != want.Events[0] || got.Count != 3 {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestQuoteAndBound(t *testing.T) {
	big := strings.Repeat("a", 5_242_880)
	for _, tc := range []struct{ got, want string }{
		{Quote("web"), `"web"`},
		{Quote(big), `"` + strings.Repeat("a", MaxEcho) + `…" (5.2 MB, cut)`},
		{Quote(strings.Repeat("é", 40)), `"` + strings.Repeat("é", 32) + `…" (80 B, cut)`},
		{Bound("short", 10), "short"},
		{Bound(strings.Repeat("b", 2000), 4), "bbbb… (2.0 kB, cut)"},
		{Bound("ab ghp_abcdefghijklmnopqrstuvwxyz0123456789"+strings.Repeat("c", 1000), 10), "ab <redact… (1.0 kB, cut)"},
		{Size(999), "999 B"},
		{Size(1_500_000_000), "1.5 GB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
