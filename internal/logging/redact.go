package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/runner-manager/runner-manager/config"
)

// Redacted replaces every secret Redact finds and every value of a sensitive attribute.
const Redacted = "<redacted>"

// secretPatterns are the shapes of secrets this program handles. Order matters: PEM blocks first,
// so their base64 body is not half-matched by the others.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), Redacted},
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9_]{16,}`), Redacted},                         // classic tokens, OAuth, user, installation, refresh
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`), Redacted},                        // fine-grained personal access tokens
	{regexp.MustCompile(`\beyJ[A-Za-z0-9+/_=-]{8,}(?:\.[A-Za-z0-9+/_=-]*){0,2}`), Redacted}, // JWTs and base64 JSON such as encoded JIT configs
	{regexp.MustCompile(`(?i)\b(bearer|token|basic)(\s+)[A-Za-z0-9._~+/=-]{16,}`), "$1$2" + Redacted},
}

// Redact returns s with every token, JWT, encoded JIT config and PEM private key replaced by
// Redacted. It is safe on any string and cheap on strings without secrets.
func Redact(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return config.RedactURL(s) // userinfo in URLs (user:password@ or token@)
}

// sensitiveKey matches attribute keys whose whole value is a secret, whatever it looks like (a JIT
// config is a long base64 blob; a webhook secret can be anything). Keys naming a file or path of a
// secret (token_file) are not secrets.
var sensitiveKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:token|secret|password|passwd|private_?key|jit_?config|encoded_jit_config|authorization|jwt|credentials?|signature|client_secret)$`)

// NewRedactingHandler wraps h so messages and attributes (nested groups, errors, Stringers and
// structured values included) are scrubbed before h sees them.
func NewRedactingHandler(h slog.Handler) slog.Handler { return redactor{next: h} }

type redactor struct{ next slog.Handler }

func (r redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

func (r redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

func (r redactor) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = redactAttr(a)
	}
	return redactor{next: r.next.WithAttrs(clean)}
}

func (r redactor) WithGroup(name string) slog.Handler { return redactor{next: r.next.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, clean...)
	}
	if sensitiveKey.MatchString(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindAny:
		return slog.Attr{Key: a.Key, Value: redactAny(v.Any())}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactAny scrubs a structured value: errors, Stringers and bytes become their scrubbed text. Any
// other value is kept as is unless its JSON form holds a secret (by shape, or under a sensitive
// key such as a struct's Token field); then its scrubbed JSON replaces it.
func redactAny(x any) slog.Value {
	switch t := x.(type) {
	case error:
		return slog.StringValue(Redact(t.Error()))
	case fmt.Stringer:
		return slog.StringValue(Redact(t.String()))
	case []byte:
		return slog.StringValue(Redact(string(t)))
	}
	b, err := json.Marshal(x)
	if err != nil {
		return slog.StringValue(Redact(fmt.Sprintf("%+v", x)))
	}
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return slog.StringValue(Redact(string(b)))
	}
	clean, changed := scrubJSON(doc)
	if !changed {
		return slog.AnyValue(x)
	}
	out, err := json.Marshal(clean)
	if err != nil {
		return slog.StringValue(Redacted)
	}
	return slog.StringValue(string(out))
}

// scrubJSON redacts a decoded JSON value in place and reports whether anything was a secret.
func scrubJSON(v any) (any, bool) {
	changed := false
	switch t := v.(type) {
	case string:
		c := Redact(t)
		return c, c != t
	case map[string]any:
		for k, e := range t {
			if sensitiveKey.MatchString(k) {
				t[k], changed = Redacted, true
				continue
			}
			var ch bool
			t[k], ch = scrubJSON(e)
			changed = changed || ch
		}
	case []any:
		for i, e := range t {
			var ch bool
			t[i], ch = scrubJSON(e)
			changed = changed || ch
		}
	}
	return v, changed
}
