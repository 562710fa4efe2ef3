package selfupdate

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Clock is the time source the watcher and the guard wait on; tests drive a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time                         { return time.Now() }
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// DefaultInterval is how often the source is stat'ed: an upgrade is not urgent, a stat is cheap.
const DefaultInterval = 30 * time.Second

// Candidate is a confirmed upgrade: the file at Path answered --version with Version, which differs
// from the running version, when it had Stamp.
type Candidate struct {
	Path    string
	Version string
	Stamp   Stamp
}

// Watcher watches the source binary (the path a package manager replaces) for a new version.
type Watcher struct {
	Source   string        // the source binary, e.g. /usr/local/bin/runner-manager
	Running  string        // version of this process: internal/version.Version
	Rejected string        // a version the crash-loop guard rolled back (Guard.Rejected); never offered again
	Interval time.Duration // 0 = DefaultInterval
	Timeout  time.Duration // --version probe timeout; 0 = DefaultProbeTimeout
	Clock    Clock         // nil = RealClock
	Run      RunFunc       // nil = ExecRun
	Logger   *slog.Logger  // nil = slog.Default()

	seen    bool  // last holds the stamp already judged
	last    Stamp // zero after a failed stat, so a reappearing file is probed
	lastErr string
	// lastRefusal is the last CheckSource refusal logged.
	lastRefusal string
}

// Next blocks until the source holds a confirmed candidate or ctx ends (then it returns ctx's
// error). The first check runs at once and compares against the compiled-in version, so a binary
// replaced while the daemon was down is still an upgrade. Each stamp is probed once: a file that
// fails --version is ignored (logged once) until it changes again. After a returned candidate, the
// next call goes on from its stamp, so an install that failed is retried only when the source changes.
func (w *Watcher) Next(ctx context.Context) (Candidate, error) {
	for {
		if c, ok := w.check(ctx); ok {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return Candidate{}, ctx.Err()
		case <-w.clock().After(w.interval()):
		}
	}
}

func (w *Watcher) check(ctx context.Context) (Candidate, bool) {
	log := w.logger().With("source", w.Source)
	st, err := StatStamp(w.Source)
	if err != nil {
		if msg := err.Error(); msg != w.lastErr {
			log.Warn("cannot stat the source binary; upgrades wait until it is back", "err", err)
			w.lastErr = msg
		}
		w.seen, w.last = true, Stamp{}
		return Candidate{}, false
	}
	w.lastErr = ""
	if w.seen && st.Equal(w.last) {
		return Candidate{}, false
	}
	// Checked before the file is ever executed: an unsafe source is not run, even for --version.
	// Checked again every period (fixing a directory above does not change the file's stamp),
	// logged once per distinct reason.
	if err := CheckSource(w.Source, os.Geteuid()); err != nil {
		if msg := err.Error(); msg != w.lastRefusal {
			log.Error("source binary refused; not executed, not installed", "stamp", st.String(), "err", err)
			w.lastRefusal = msg
		}
		return Candidate{}, false
	}
	w.lastRefusal = ""
	v, err := ProbeVersion(ctx, w.Run, w.Source, w.Timeout)
	if ctx.Err() != nil {
		return Candidate{}, false // shutting down: judge this stamp next time
	}
	if errors.Is(err, syscall.ETXTBSY) {
		// Still open for writing: the writer's close will not change the stamp, so do not judge it yet.
		log.Debug("source binary is still being written; checking again later")
		return Candidate{}, false
	}
	first := !w.seen
	w.seen, w.last = true, st
	switch {
	case err != nil:
		log.Warn("source binary changed but does not run; ignored until it changes again",
			"stamp", st.String(), "err", err)
	case v == w.Running && first:
		log.Debug("source binary holds the running version", "version", v)
	case v == w.Running:
		log.Info("source binary rewritten with the running version; not an upgrade", "version", v)
	case v == w.Rejected:
		log.Warn("source binary holds a version that was rolled back after a crash loop; not retried",
			"version", v, "hint", "install a different version, or run `runner-manager service install` to force it")
	default:
		log.Info("upgrade candidate confirmed", "running", w.Running, "candidate", v)
		return Candidate{Path: w.Source, Version: v, Stamp: st}, true
	}
	return Candidate{}, false
}

func (w *Watcher) interval() time.Duration {
	if w.Interval > 0 {
		return w.Interval
	}
	return DefaultInterval
}

func (w *Watcher) clock() Clock         { return clockOr(w.Clock) }
func (w *Watcher) logger() *slog.Logger { return loggerOr(w.Logger) }

func clockOr(c Clock) Clock {
	if c != nil {
		return c
	}
	return RealClock{}
}

func loggerOr(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
