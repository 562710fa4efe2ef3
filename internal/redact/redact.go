// Package redact owns what counts as a secret in anything runner-manager prints: the shapes of the
// credentials it handles (GitHub tokens, PEM private keys, JWTs and encoded JIT configs, userinfo
// in URLs) and the contents of the secret files the config names. Every output (the daemon's log,
// status, events, validate, config print, verify, start-up and exit messages) passes through it.
// It imports nothing of ours, so config, logging, status, the daemon and the CLI can all use it.
package redact

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Redacted replaces every secret found.
const Redacted = "<redacted>"

// MinSecretLen is the shortest secret-file content (or line of it) that is scrubbed by value.
// Shorter values are words any message may contain ("true", "30s", a target name): scrubbing them
// would garble every output, and a secret that short is guessable anyway. docs/security.md.
const MinSecretLen = 8

// shapes are the shapes of secrets this program handles. Order matters: PEM blocks first, so
// their base64 body is not half-matched by the others.
var shapes = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), Redacted},
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9_]{16,}`), Redacted},                         // classic tokens, OAuth, user, installation, refresh
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`), Redacted},                        // fine-grained personal access tokens
	{regexp.MustCompile(`\beyJ[A-Za-z0-9+/_=-]{8,}(?:\.[A-Za-z0-9+/_=-]*){0,2}`), Redacted}, // JWTs and base64 JSON such as encoded JIT configs
	{regexp.MustCompile(`(?i)\b(bearer|token|basic)(\s+)[A-Za-z0-9._~+/=-]{16,}`), "$1$2" + Redacted},
	{regexp.MustCompile(`(://)[^/\s@]+@`), "${1}" + Redacted + "@"}, // URL userinfo (user:password@ or token@)
}

// Shapes returns s with every credential shape replaced by Redacted. It knows no configured
// secret: use a Redactor's String where one is at hand. Cheap on strings without secrets.
func Shapes(s string) string {
	for _, p := range shapes {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// URL returns s with only the userinfo of any URL in it redacted, for messages that must keep
// the rest of a URL readable.
func URL(s string) string {
	p := shapes[len(shapes)-1]
	return p.re.ReplaceAllString(s, p.repl)
}

// Redactor scrubs the shapes and every secret it was told (Learn, LearnFiles). The zero value and
// nil are ready: they scrub shapes only. Safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	known   map[string]struct{}
	secrets []string          // known, longest first, so a secret inside another is not half-replaced
	rep     *strings.Replacer // every known secret -> Redacted
}

// New returns a Redactor that knows no secret yet.
func New() *Redactor { return &Redactor{} }

// String returns s with every shape and every known secret replaced by Redacted, including a
// known secret's first MinSecretLen or more bytes left before a cut ("…", see Cut).
func (r *Redactor) String(s string) string {
	if r != nil {
		r.mu.RLock()
		rep, secrets := r.rep, r.secrets
		r.mu.RUnlock()
		if rep != nil {
			s = rep.Replace(s)
			s = cutSecrets(s, secrets)
		}
	}
	return Shapes(s)
}

// Learn adds secrets to scrub: each one whole (spaces around it trimmed), each of its lines, and
// the value of each NAME=value line (an environment file's), those of at least MinSecretLen bytes.
// Secrets stay known for the Redactor's life: a rotated secret is still one.
func (r *Redactor) Learn(secrets ...string) {
	if r == nil {
		return
	}
	var add []string
	for _, s := range secrets {
		add = append(add, strings.TrimSpace(s))
		for l := range strings.Lines(s) {
			l = strings.TrimSpace(l)
			add = append(add, l)
			if _, v, ok := strings.Cut(l, "="); ok {
				add = append(add, strings.Trim(strings.TrimSpace(v), `"'`))
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	grew := false
	for _, s := range escaped(add) {
		if len(s) < MinSecretLen {
			continue
		}
		if _, ok := r.known[s]; ok {
			continue
		}
		if r.known == nil {
			r.known = map[string]struct{}{}
		}
		r.known[s], grew = struct{}{}, true
	}
	if !grew {
		return
	}
	all := make([]string, 0, len(r.known))
	for s := range r.known {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, Redacted)
	}
	r.secrets, r.rep = all, strings.NewReplacer(pairs...)
}

// escaped is secrets and the forms they take inside a message: quoted by %q (a problem's echo),
// JSON-encoded (validate --format json, status --json, JSON logs; json.Marshal escapes <, > and &
// too), and both.
func escaped(secrets []string) []string {
	out := slices.Clone(secrets)
	for _, s := range secrets {
		q := strconv.Quote(s)
		q = q[1 : len(q)-1]
		out = append(out, q, jsonEscape(s), jsonEscape(q))
	}
	return out
}

func jsonEscape(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	return string(b[1 : len(b)-1])
}

// cutSecrets redacts what a cut left of a known secret: MinSecretLen or more of its first bytes
// right before the cut mark.
func cutSecrets(s string, secrets []string) string {
	if !strings.Contains(s, CutMark) {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, CutMark)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		before := rest[:i]
		for _, sec := range secrets {
			if k := sharedPrefixSuffix(before, sec); k >= MinSecretLen {
				before = before[:len(before)-k] + Redacted
				break
			}
		}
		b.WriteString(before)
		b.WriteString(CutMark)
		rest = rest[i+len(CutMark):]
	}
}

// sharedPrefixSuffix is the length of the longest prefix of sec that ends text.
func sharedPrefixSuffix(text, sec string) int {
	for k := min(len(text), len(sec)); k >= MinSecretLen; k-- {
		if strings.HasSuffix(text, sec[:k]) {
			return k
		}
	}
	return 0
}

// Writer returns w behind r: each Write is scrubbed whole before it reaches w. Every writer of
// ours writes a line or a document at a time (fmt.Fprint*, slog, json.Encoder), so no secret is
// split across two Writes. Unwrap returns w.
func (r *Redactor) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the writer behind, for a caller that must know what it is (a terminal, the journal).
func (w *writer) Unwrap() io.Writer { return w.w }

// Unwrap returns the writer under every Redactor's Writer around w.
func Unwrap(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

type ctxKey struct{}

// NewContext returns ctx carrying r, for a command's code to teach the Redactor its outputs go
// through (the CLI's standard output and error).
func NewContext(ctx context.Context, r *Redactor) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// FromContext is the Redactor NewContext stored, or nil (which scrubs shapes only).
func FromContext(ctx context.Context) *Redactor {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(ctxKey{}).(*Redactor)
	return r
}
