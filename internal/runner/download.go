package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// download fetches p into a temp file in the cache directory, hashing while writing, and returns
// its path only if the sha256 matches. On any failure the temp file is removed.
func (c *Cache) download(parent context.Context, p Package) (path string, err error) {
	key := p.Key()
	where := redactURL(p.URL)
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stall := time.AfterFunc(c.opts.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	defer func() {
		if errors.Is(context.Cause(ctx), errStalled) && parent.Err() == nil {
			err = fmt.Errorf("%w (no data for %s; check the network path to %s)", err, c.opts.StallTimeout, where)
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return "", fmt.Errorf("download runner package %s: bad URL %s: %w", key, where, err)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("download runner package %s from %s: %w", key, where, redactErr(err, p.URL))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download runner package %s from %s: server answered %s; check the host's network and proxy settings, then retry",
			key, where, resp.Status)
	}
	f, err := os.CreateTemp(c.dir, downloadPrefix+key+"-")
	if err != nil {
		return "", fmt.Errorf("download runner package %s: create temp file in %s: %w", key, c.dir, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	hash := sha256.New()
	prog := c.newProgress(key, resp.ContentLength)
	prog.stall, prog.stallAfter = stall, c.opts.StallTimeout
	n, err := io.Copy(io.MultiWriter(f, hash, prog), resp.Body)
	if cause := context.Cause(ctx); err != nil && cause != nil {
		err = cause // "stalled" or the caller's cancellation, rather than a bare read error
	}
	prog.finish(n, err)
	if err != nil {
		return "", fmt.Errorf("download runner package %s from %s after %d bytes (the partial file was removed; retry): %w",
			key, where, n, redactErr(err, p.URL))
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("download runner package %s: sync %s: %w", key, f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("download runner package %s: close %s: %w", key, f.Name(), err)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); !strings.EqualFold(got, p.SHA256) {
		return "", fmt.Errorf("runner package %s from %s failed verification: sha256 is %s, GitHub published %s (%d bytes received); the download was discarded",
			key, where, got, strings.ToLower(p.SHA256), n)
	}
	return f.Name(), nil
}

var errStalled = errors.New("download stalled")

// redactURL drops the query and fragment: a presigned download URL carries a signature there.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// redactErr rewrites an error whose text embeds the full URL (net/http's *url.Error does).
func redactErr(err error, raw string) error {
	if raw == "" || !strings.Contains(err.Error(), raw) {
		return err
	}
	return redactedError{msg: strings.ReplaceAll(err.Error(), raw, redactURL(raw)), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress logs a long download every LogInterval and drives a progress bar on a terminal.
// It is an io.Writer in the copy path, so it needs no goroutine.
type progress struct {
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	key      string
	total    int64
	bar      *progressbar.ProgressBar

	start, lastLog time.Time
	done           int64

	stall      *time.Timer // rearmed by every write: the download is alive
	stallAfter time.Duration
}

func (c *Cache) newProgress(key string, total int64) *progress {
	now := c.opts.Now()
	p := &progress{
		log: c.opts.Logger, now: c.opts.Now, interval: c.opts.LogInterval,
		key: key, total: total, start: now, lastLog: now,
	}
	if w := c.opts.Progress; w != nil && c.isTTY(w) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
			progressbar.OptionSetDescription("runner "+key),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			// 0 disables the spinner goroutine an unknown length would otherwise start.
			progressbar.OptionSetSpinnerChangeInterval(0),
		)
	}
	p.log.Info("downloading runner package", p.sizeAttrs("package", key)...)
	return p
}

// sizeAttrs appends bytes_total when the server sent a length: an unknown size (-1) is left out
// rather than logged as a negative total.
func (p *progress) sizeAttrs(attrs ...any) []any {
	if p.total >= 0 {
		attrs = append(attrs, "bytes_total", p.total)
	}
	return attrs
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.stall != nil {
		p.stall.Reset(p.stallAfter)
	}
	if p.bar != nil {
		_ = p.bar.Add(len(b)) // a broken terminal must not fail the download
	}
	if now := p.now(); now.Sub(p.lastLog) >= p.interval {
		p.lastLog = now
		p.log.Info("downloading runner package", p.sizeAttrs("package", p.key,
			"bytes", p.done, "bytes_per_second", p.rate(now))...)
	}
	return len(b), nil
}

func (p *progress) rate(now time.Time) int64 {
	secs := now.Sub(p.start).Seconds()
	if secs <= 0 {
		return 0
	}
	return int64(float64(p.done) / secs)
}

func (p *progress) finish(n int64, err error) {
	if p.bar != nil {
		if err == nil {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
		}
	}
	if err == nil {
		now := p.now()
		p.log.Info("downloaded runner package", "package", p.key, "bytes", n,
			"seconds", now.Sub(p.start).Seconds(), "bytes_per_second", p.rate(now))
	}
}
