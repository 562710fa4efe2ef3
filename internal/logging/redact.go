package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/runner-manager/runner-manager/internal/redact"
)

// sensitiveKey matches attribute keys whose whole value is a secret, whatever it looks like (a JIT
// config is a long base64 blob; a webhook secret can be anything). Keys naming a file or path of a
// secret (token_file) are not secrets.
var sensitiveKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:token|secret|password|passwd|private_?key|jit_?config|encoded_jit_config|authorization|jwt|credentials?|signature|client_secret)$`)

// maxLogValue bounds a record's message and each string attribute: a longer one (a 5 MB value
// echoed by a rejected config) is cut with its size noted (redact.Bound), so no log line is megabytes.
const maxLogValue = 4096

// NewRedactingHandler wraps h so messages and attributes (nested groups, errors, Stringers and
// structured values included) are scrubbed by r (shapes only when r is nil) and bounded to
// maxLogValue bytes before h sees them.
func NewRedactingHandler(h slog.Handler, r *redact.Redactor) slog.Handler {
	return redactor{next: h, r: r}
}

type redactor struct {
	next slog.Handler
	r    *redact.Redactor
}

// clean is s scrubbed and bounded.
func (r redactor) clean(s string) string { return r.r.Bound(s, maxLogValue) }

func (r redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

func (r redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.clean(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

func (r redactor) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = r.attr(a)
	}
	return redactor{next: r.next.WithAttrs(clean), r: r.r}
}

func (r redactor) WithGroup(name string) slog.Handler {
	return redactor{next: r.next.WithGroup(name), r: r.r}
}

func (r redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = r.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	}
	if sensitiveKey.MatchString(a.Key) {
		return slog.String(a.Key, redact.Redacted)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.clean(v.String()))
	case slog.KindAny:
		return slog.Attr{Key: a.Key, Value: r.any(v.Any())}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactAny scrubs a structured value: errors, Stringers and bytes become their scrubbed text. Any
// other value is kept as is unless its JSON form holds a secret (by shape, or under a sensitive
// key such as a struct's Token field); then its scrubbed JSON replaces it.
func (r redactor) any(x any) slog.Value {
	switch t := x.(type) {
	case error:
		return slog.StringValue(r.clean(t.Error()))
	case fmt.Stringer:
		return slog.StringValue(r.clean(t.String()))
	case []byte:
		return slog.StringValue(r.clean(string(t)))
	}
	b, err := json.Marshal(x)
	if err != nil {
		return slog.StringValue(r.clean(fmt.Sprintf("%+v", x)))
	}
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return slog.StringValue(r.clean(string(b)))
	}
	clean, changed := r.scrubJSON(doc)
	if !changed {
		return slog.AnyValue(x)
	}
	out, err := json.Marshal(clean)
	if err != nil {
		return slog.StringValue(redact.Redacted)
	}
	return slog.StringValue(r.clean(string(out)))
}

// scrubJSON redacts a decoded JSON value in place and reports whether anything was a secret.
func (r redactor) scrubJSON(v any) (any, bool) {
	changed := false
	switch t := v.(type) {
	case string:
		c := r.r.String(t)
		return c, c != t
	case map[string]any:
		for k, e := range t {
			if sensitiveKey.MatchString(k) {
				t[k], changed = redact.Redacted, true
				continue
			}
			var ch bool
			t[k], ch = r.scrubJSON(e)
			changed = changed || ch
		}
	case []any:
		for i, e := range t {
			var ch bool
			t[i], ch = r.scrubJSON(e)
			changed = changed || ch
		}
	}
	return v, changed
}
