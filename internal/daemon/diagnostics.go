package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/internal/diag"
	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/journal"
)

// diagKeeper keeps the diagnostics of a failed or stopped attempt (internal/diag) just before
// its runtime directory is removed: one the journal concluded with a reason (a startup timeout,
// or any stop the engine gives a reason), or a runner that exited non-zero, could not start, or
// left no exit status. A runner that ended its job and exited 0 keeps nothing (its job's logs are
// GitHub's), nor does an idle runner the daemon stopped without a reason (scale-down, a drain):
// keeping those would push the failures out of the store.
type diagKeeper struct {
	journal  *journal.Journal
	root     string
	redactor *redact.Redactor
	log      *slog.Logger
	now      func() time.Time

	mu sync.Mutex // one keep at a time: each prunes the whole store
}

// failed says whether an attempt ended so that its diagnostics are worth keeping, and why.
func failed(e runner.Exit, exited bool, a journal.Attempt) (string, bool) {
	switch {
	case a.Reason != "":
		return a.Reason, true
	case !exited:
		return "no exit status: the runner was killed, or never started", true
	case e.Error != "":
		return e.Error, true
	case e.StopRequested:
		return "", false // an idle runner reaped: routine, whatever its exit status
	case e.ExitCode != 0:
		if e.Signal != "" {
			return "killed by " + e.Signal, true
		}
		return fmt.Sprintf("exited with status %d", e.ExitCode), true
	}
	return "", false
}

func (k *diagKeeper) keep(ctx context.Context, dir string) {
	id := filepath.Base(dir)
	a, err := k.journal.Get(ctx, id)
	if err != nil {
		a = journal.Attempt{ID: id} // keep what the directory holds; the journal's words are extra
	}
	e, exited, err := runner.ExitStatus(dir)
	if err != nil {
		exited = false
	}
	why, keep := failed(e, exited, a)
	if !keep {
		return
	}
	kept := diag.Attempt{ID: id, Target: a.Target, Runner: a.RunnerName, State: string(a.State), Reason: why, KeptAt: k.now()}
	if exited {
		code := e.ExitCode
		kept.ExitCode = &code
	}
	k.mu.Lock()
	kept, err = diag.Keep(k.root, dir, kept, k.redactor)
	k.mu.Unlock()
	switch {
	case err != nil:
		k.log.Warn("cannot keep the diagnostics of a failed runner; they are removed with its directory", "attempt", id, "err", err)
	case len(kept.Files) > 0:
		k.log.Info("kept the diagnostics of a failed runner", "attempt", id, "target", a.Target, "reason", why,
			"files", len(kept.Files), "show", "runner-manager logs "+id)
	}
}

// statusSource is what the status socket and status_listen serve: the scrubbed snapshot, and the
// kept diagnostics (scrubbed again on the way out, with the secrets the daemon knows now).
type statusSource struct{ d *daemon }

func (s statusSource) Snapshot(ctx context.Context) (status.Snapshot, error) {
	snap, err := s.d.scrubbedSnapshot(ctx)
	if err != nil {
		return snap, err
	}
	kept, _ := s.Failures(ctx) // the snapshot does not fail for want of the kept diagnostics
	for i, t := range snap.Targets {
		for _, f := range kept { // newest first
			if f.Target == t.Name {
				snap.Targets[i].LastFailure = &f
				break
			}
		}
	}
	return snap, nil
}

func (s statusSource) Failures(context.Context) ([]status.Failure, error) {
	kept, err := diag.List(diag.Root(s.d.config().Daemon.StateDir))
	if err != nil {
		return nil, err
	}
	out := make([]status.Failure, 0, len(kept))
	for _, a := range kept {
		out = append(out, s.failure(a))
	}
	return out, nil
}

func (s statusSource) failure(a diag.Attempt) status.Failure {
	r := s.d.o.Redactor
	f := status.Failure{Attempt: a.ID, Target: a.Target, Runner: a.Runner, Reason: r.String(a.Reason), ExitCode: a.ExitCode,
		At: a.KeptAt, Files: []string{}, Command: status.LogsCommand(a.ID)}
	for _, file := range a.Files {
		f.Files = append(f.Files, r.String(file.Name))
	}
	return f
}

func (s statusSource) Logs(_ context.Context, id string) (status.Logs, error) {
	a, data, err := diag.Read(diag.Root(s.d.config().Daemon.StateDir), id)
	if errors.Is(err, diag.ErrNotKept) {
		return status.Logs{}, fmt.Errorf("%w: %w", status.ErrNoLogs, err)
	}
	if err != nil {
		return status.Logs{}, err
	}
	r := s.d.o.Redactor
	l := status.Logs{Failure: s.failure(a), Logs: []status.LogFile{}}
	for _, sk := range a.Skipped {
		l.Skipped = append(l.Skipped, r.String(sk))
	}
	for i, f := range a.Files {
		l.Logs = append(l.Logs, status.LogFile{Name: r.String(f.Name), Dropped: f.Dropped, Content: r.String(string(data[i]))})
	}
	return l, nil
}
