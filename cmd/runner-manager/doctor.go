package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/doctor"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/runner"
	"github.com/runner-manager/runner-manager/internal/service"
	"github.com/runner-manager/runner-manager/internal/status"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// doctorDeps are what doctor takes from the world; tests replace them.
type doctorDeps struct {
	transport http.RoundTripper
	sleep     auth.SleepFunc
	now       func() time.Time
	freeBytes func(string) (uint64, error)
	cgroups   func() (string, error)
}

func newDoctorCmd() *cobra.Command {
	return newDoctorCmdWith(doctorDeps{now: time.Now, freeBytes: doctor.StatfsFree, cgroups: doctor.Cgroup2})
}

// newDoctorCmdWith is `runner-manager doctor`: one look at everything a host needs before it is
// trusted with jobs, each finding with what to do.
func newDoctorCmdWith(d doctorDeps) *cobra.Command {
	var (
		path, root           string
		asJSON, fix, offline bool
		timeout              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host (users, directories, cgroups, disk, service, GitHub, clock) and say what to fix",
		Long: `doctor checks what the daemon needs from this host and prints one line per finding (OK, WARN,
FAIL or SKIP) with what to do: the config; every credential file (the rule validate applies:
regular, readable only by its owner); the state dir (0700), its package cache and the runtime
root (0711), owned by root; the per-slot runner users and their homes (0700, their own); cgroup
v2 for the runners; the Docker socket of container targets; free disk on the state dir's
filesystem (daemon.min_free_disk, 1 GiB by default); the service unit installed and enabled, and service status's
verdict; the upgrade source binary (only root may change it or the directories above it); and,
online, what verify checks (the credential, each target's access) and the clock against the
Date header of GitHub's answers (warn from 10 s, fail from 60 s).

--fix repairs only what is safe and says what it changed: the modes of those directories, slot
homes and credential files others may read, and missing slot users (created as service install
does). It never changes an owner and never deletes. --offline skips GitHub and the clock;
without a usable credential they fail (exit 4). --root checks a directory tree instead of /
(image building, tests): the kernel, the service manager and GitHub are then not checked.

Exit codes (docs/exit-codes.md): 0 when nothing failed (warnings allowed), 1 when a check of
the host failed, else 4, 6 or 7 as verify for a failed online check.`,
		Example: `  runner-manager doctor
  runner-manager doctor --fix
  runner-manager doctor --offline --json
  runner-manager doctor --root /srv/image --offline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			onDisk := filepath.Join(root, path)
			cfg, cerr := config.LoadWith(onDisk, config.Options{Offline: true})
			learnSecrets(ctx, cfg, cerr)
			sys := service.Detect()
			e := &doctor.Env{Root: root, ConfigPath: path, Config: cfg, ConfigErr: cerr, EUID: os.Geteuid(),
				Now: d.now, Fix: fix, Users: doctor.HostUsers{}, FreeBytes: d.freeBytes, Cgroups: d.cgroups,
				Paths: service.DefaultPaths(sys)}
			if root != "" {
				e.Users = doctor.PasswdFile(filepath.Join(root, "etc", "passwd"))
			} else {
				m := &service.Manager{System: sys, Paths: e.Paths, Clock: d.now, Logger: slog.New(slog.DiscardHandler)}
				e.Service = func(ctx context.Context) service.Status {
					return m.Status(ctx, socketSource(status.SocketPath(m.Paths.StateDir)))
				}
				if e.EUID == 0 {
					e.CreateUsers = slotUsers(cfg).Provision
				}
			}
			onlineChecks(ctx, e, d, offline, timeout)
			rep := doctor.Run(ctx, e)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				_ = enc.Encode(rep) // a failed write to stdout has nowhere better to go
			} else if err := rep.Render(cmd.OutOrStdout()); err != nil {
				return withCode(exitFailure, err)
			}
			return doctorExit(rep)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "config file the daemon reads")
	cmd.Flags().StringVar(&root, "root", "", "check this directory tree instead of / (image building, tests); the kernel, service manager and GitHub are not checked")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.Flags().BoolVar(&fix, "fix", false, "repair what is safe (modes, missing slot users) and say what changed")
	cmd.Flags().BoolVar(&offline, "offline", false, "do not ask GitHub (skips the credential, target and clock checks)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "give up on GitHub after this long")
	return cmd
}

// slotUsers are the config's per-slot runner users (the default prefix when it did not load).
func slotUsers(cfg *config.Config) *runner.SlotUsers {
	if cfg == nil {
		return &runner.SlotUsers{Prefix: config.DefaultRunnerUserPrefix}
	}
	return &runner.SlotUsers{Prefix: cfg.Daemon.RunnerUserPrefix}
}

// onlineChecks sets e.Online to verify's checks through a GitHub client whose transport keeps
// the Date header, or says why they are skipped.
func onlineChecks(ctx context.Context, e *doctor.Env, d doctorDeps, offline bool, timeout time.Duration) {
	cfg := e.Config
	switch {
	case offline:
		e.OfflineWhy = "--offline"
		return
	case e.Root != "":
		e.OfflineWhy = "not checked under --root: the tree's credential is not this host's"
		return
	case cfg == nil:
		e.OfflineWhy = "the config did not load"
		return
	}
	dates := &doctor.DateRecorder{Next: d.transport}
	client, err := github.NewFromConfig(cfg.GitHub, cfg.Daemon.StateDir, github.Options{Transport: dates, Sleep: d.sleep, MaxRetries: 2})
	if err != nil {
		e.OfflineWhy, e.OfflineProblem = fmt.Sprintf("no usable GitHub credential: %v", err), verify.ProblemCredential
		return
	}
	e.Online = func(ctx context.Context) (verify.Report, time.Time, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		rep := verify.Run(ctx, cfg, verify.Options{GitHub: client, Kind: cfg.GitHub.Auth(),
			ScaleSets: verify.ActionsService{APIURL: cfg.GitHub.APIURL, Tokens: client, Transport: dates}})
		return rep, dates.Last(), nil
	}
}

// doctorExit maps the worst finding to the exit-code contract.
func doctorExit(rep doctor.Report) error {
	p, failed := rep.Worst()
	switch {
	case !failed:
		return nil
	case p == verify.ProblemCredential:
		return withCode(exitNotAuthed, nil)
	case p == verify.ProblemAccess:
		return withCode(exitNotReady, nil)
	case p == verify.ProblemUnavailable:
		return withCode(exitUnavailable, nil)
	}
	return withCode(exitFailure, nil)
}
