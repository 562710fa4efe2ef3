package redact

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// CutMark ends a value that was cut.
const CutMark = "…"

// MaxEcho is how much of a value a message echoes: longer values are cut to it, their size noted.
// Long enough for any name, label, path or URL an operator writes; a 5 MB paste is not repeated.
const MaxEcho = 64

// margin is how far past a cut a credential that starts before it can reach (a 4096-bit PEM key
// is about 3.2 kB): only that much of a long value is scrubbed, so bounding 5 MB costs what
// bounding 8 kB does.
const margin = 8 << 10

// Quote is strconv.Quote of s scrubbed, cut to MaxEcho bytes with its size noted when longer:
// `"aaaa…" (5.2 MB, cut)`.
func Quote(s string) string { return (*Redactor)(nil).Quote(s) }

// Quote is the package's Quote, scrubbed by r.
func (r *Redactor) Quote(s string) string {
	head, cut := r.head(s, MaxEcho)
	if !cut {
		return strconv.Quote(head)
	}
	return strconv.Quote(head+CutMark) + " (" + Size(len(s)) + ", cut)"
}

// Bound is s scrubbed, cut to n bytes (whole UTF-8 characters) with its size noted when longer:
// `aaaa… (5.2 MB, cut)`.
func Bound(s string, n int) string { return (*Redactor)(nil).Bound(s, n) }

// Bound is the package's Bound, scrubbed by r.
func (r *Redactor) Bound(s string, n int) string {
	head, cut := r.head(s, n)
	if !cut {
		return head
	}
	return head + CutMark + " (" + Size(len(s)) + ", cut)"
}

// head is s scrubbed and cut to n bytes, and whether anything was cut. Scrubbing comes first, so
// a cut never leaves part of a credential that no longer has its shape.
func (r *Redactor) head(s string, n int) (string, bool) {
	if len(s) <= n {
		return r.String(s), false
	}
	h := r.String(prefix(s, n+margin))
	return prefix(h, n), true
}

// prefix is s's first n bytes at most, not splitting a UTF-8 character.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Size is n bytes for a reader: "512 B", "5.2 MB" (decimal units, as ls -h --si).
func Size(n int) string {
	const unit = 1000
	if n < unit {
		return strconv.Itoa(n) + " B"
	}
	f, u := float64(n)/unit, 0
	for f >= unit && u < 3 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %cB", f, "kMGT"[u])
}
