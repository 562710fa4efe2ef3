package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/status"
)

// newStatusCmd is `runner-manager status`: the running daemon's config generation, reload result,
// GitHub contact and per-target demand and capacity, read from its status socket.
func newStatusCmd() *cobra.Command { return statusCmd(time.Now) }

// newRunnersCmd is `runner-manager runners`: the runners the daemon owns, with age, state and job.
func newRunnersCmd() *cobra.Command { return runnersCmd(time.Now) }

// socketFlags are the flags both commands share to find the daemon.
type socketFlags struct {
	config, socket string
	json           bool
}

func (f *socketFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", defaultConfigPath, "config file whose daemon.state_dir holds the status socket")
	cmd.Flags().StringVar(&f.socket, "socket", "", "status socket to read (default: status.sock in the config's daemon.state_dir; on Windows the status.endpoint file there)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the daemon's JSON document instead of a table")
}

// print writes doc, the daemon's JSON document, with --json; else render writes it for a person.
func (f *socketFlags) print(cmd *cobra.Command, doc any, render func(io.Writer) error) error {
	if f.json {
		return status.WriteJSON(cmd.OutOrStdout(), doc)
	}
	return render(cmd.OutOrStdout())
}

func statusCmd(now func() time.Time) *cobra.Command {
	var f socketFlags
	var fleetOnly bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the running daemon's config, GitHub contact and targets",
		Long: `Status asks the running daemon, over the unix socket in its state directory, for its current
view: the config generation it runs and whether the last reload succeeded (with every problem when
it did not), when GitHub last answered, and per target the demand, the runners owned, busy and
idle, and any backoff or error; then the recent events. With --fleet: the [fleet] this host is in,
its live hosts, and per target the leader that reads GitHub, its demand and every host's supply.
Exit status 1 when no daemon answers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			snap, err := status.Fetch(cmd.Context(), f.socketPath(cmd))
			if err != nil {
				return withCode(exitFailure, err)
			}
			if fleetOnly {
				return f.print(cmd, snap.Fleet, func(w io.Writer) error { return status.RenderFleet(w, snap.Fleet, now()) })
			}
			return f.print(cmd, snap, func(w io.Writer) error { return status.RenderStatus(w, snap, now()) })
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&fleetOnly, "fleet", false, "show the fleet: hosts, each target's leader, demand and per-host supply")
	return cmd
}

func runnersCmd(now func() time.Time) *cobra.Command {
	var f socketFlags
	var failed bool
	cmd := &cobra.Command{
		Use:   "runners",
		Short: "List the runners the running daemon owns, with age, state and job",
		Long: `List the runners the running daemon owns, with age, state and job.

With --failed, list instead the failed or stopped runner attempts whose diagnostics the daemon
kept (the shim's log and the runner's _diag logs, newest first), each with the command that shows
them: runner-manager logs ATTEMPT-ID.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if failed {
				failures, err := status.FetchFailures(cmd.Context(), f.socketPath(cmd))
				if err != nil {
					return withCode(exitFailure, err)
				}
				return f.print(cmd, status.FailureList{Failures: failures}, func(w io.Writer) error {
					return status.RenderFailures(w, failures, now())
				})
			}
			runners, err := status.FetchRunners(cmd.Context(), f.socketPath(cmd))
			if err != nil {
				return withCode(exitFailure, err)
			}
			return f.print(cmd, status.RunnerList{Runners: runners}, func(w io.Writer) error {
				return status.RenderRunners(w, runners, now())
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&failed, "failed", false, "list the failed or stopped attempts whose logs were kept")
	return cmd
}

// newLogsCmd is `runner-manager logs ATTEMPT-ID`: a failed attempt's kept diagnostics.
func newLogsCmd() *cobra.Command {
	var f socketFlags
	cmd := &cobra.Command{
		Use:   "logs ATTEMPT-ID",
		Short: "Show the kept logs of a failed or stopped runner attempt",
		Long: `Show the diagnostics the daemon kept of a failed or stopped runner attempt: the shim's log
and the runner's own _diag logs, secrets redacted. ` + "`runner-manager runners --failed`" + ` lists the
attempts, and ` + "`runner-manager status`" + ` names each target's last failure.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logs, err := status.FetchLogs(cmd.Context(), f.socketPath(cmd), args[0])
			if err != nil {
				return withCode(exitFailure, err)
			}
			return f.print(cmd, logs, func(w io.Writer) error { return status.RenderLogs(w, logs) })
		},
	}
	f.register(cmd)
	return cmd
}

// socketPath is --socket, else the socket in the config's state_dir. A config that cannot be
// loaded must not hide the daemon (an invalid edit is exactly when an operator runs status, and
// the daemon keeps its last good config), so it uses the state_dir the rejected file still names,
// or else the default state dir, with a note.
func (f *socketFlags) socketPath(cmd *cobra.Command) string {
	if f.socket != "" {
		return f.socket
	}
	cfg, err := config.Load(f.config)
	learnSecrets(cmd.Context(), cfg, err)
	if err == nil {
		return status.SocketPath(cfg.Daemon.StateDir)
	}
	dir := config.DefaultStateDir
	if env := os.Getenv(config.EnvPrefix + "STATE_DIR"); env != "" {
		dir = env
	}
	why := "cannot be read"
	var cerr *config.Error
	if errors.As(err, &cerr) {
		why = "is invalid (the daemon keeps running its last good config)"
		if cerr.StateDir != "" {
			dir = cerr.StateDir
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "note: config %s %s; looking for the daemon in %s (pass --socket to choose)\n", f.config, why, dir)
	return status.SocketPath(dir)
}

// newReloadCmd is `runner-manager reload`: the running daemon reloads its config file now, as
// SIGHUP makes it on Unix (and the service's paramchange on Windows), and says what came of it.
func newReloadCmd() *cobra.Command {
	var f socketFlags
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Ask the running daemon to reload its config file now, and show the outcome",
		Long: `Reload asks the running daemon, over its status API (the unix socket in its state directory,
or on Windows loopback TCP with the token in the state directory's status.endpoint file), to read
and apply its config file now, as SIGHUP does on Unix, without waiting for the file watch. Whoever
may read status may ask. It prints the outcome: applied (the new config generation and what
changed), unchanged, or rejected (every problem, file:line:col; the last good config keeps running).

Exit status: 0 applied or unchanged, 1 rejected (or the daemon failed to answer), 8 no daemon is
running there (docs/exit-codes.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := status.RequestReload(cmd.Context(), f.socketPath(cmd))
			switch {
			case errors.Is(err, status.ErrNotRunning):
				return withCode(exitNotRunning, err)
			case err != nil:
				return withCode(exitFailure, err)
			}
			if err := f.print(cmd, res, func(w io.Writer) error { return renderReload(w, res) }); err != nil {
				return withCode(exitFailure, err)
			}
			if res.Outcome == status.ReloadRejected {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// renderReload writes a reload's outcome for a person.
func renderReload(w io.Writer, res status.ReloadResult) error {
	var err error
	switch res.Outcome {
	case status.ReloadApplied:
		_, err = fmt.Fprintf(w, "reload applied: config generation %d runs now: %s\n", res.Generation, res.Changes)
	case status.ReloadUnchanged:
		_, err = fmt.Fprintf(w, "reload applied: no change (config generation %d)\n", res.Generation)
	default:
		_, err = fmt.Fprintf(w, "reload rejected: the last good config (generation %d) keeps running; fix these and reload again:\n", res.Generation)
		for _, p := range res.Problems {
			if err == nil {
				_, err = fmt.Fprintf(w, "  %s\n", p)
			}
		}
	}
	return err
}
