package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/daemon"
)

// newConfigCmd is `runner-manager config`, home of `config print`, `config diff` and `config init`.
func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Write a starter config, inspect the effective one, compare two"}
	cmd.AddCommand(newConfigPrintCmd(), configDiffCmd(time.Now), newConfigInitCmd())
	return cmd
}

// newConfigPrintCmd prints the effective config (file + defaults + RUNNER_MANAGER_* environment)
// with target env values redacted; it loads through config.Load so it shows what the daemon runs.
func newConfigPrintCmd() *cobra.Command {
	var path, format string
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the effective config after defaults and environment, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "toml" && format != "json" {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q: use toml or json", format))
			}
			cfg, err := config.Load(path)
			learnSecrets(cmd.Context(), cfg, err)
			var cerr *config.Error
			switch {
			case errors.As(err, &cerr):
				return withCode(exitFailure, fmt.Errorf("config is invalid (run `runner-manager validate --config %s`):\n%w", path, err))
			case err != nil:
				return withCode(exitUsage, unreadable(path, err))
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), w.String())
			}
			var out []byte
			if format == "json" {
				out, err = json.MarshalIndent(cfg.Redacted(), "", "  ")
				out = append(out, '\n')
			} else {
				out, err = toml.Marshal(cfg.Redacted())
			}
			if err != nil {
				return fmt.Errorf("encode config as %s: %w", format, err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "config file (.toml, .yaml or .yml)")
	choiceFlag(cmd, &format, "format", "toml", "output: toml or json", "toml", "json")
	return cmd
}

// configDiffCmd prints what reloading FILE would change against the config at --config (the
// file the daemon runs), key by key with each key's class, from config.Diff: the same answer the
// daemon acts on. Then, for each target of FILE with a schedule, the entry in force at now and
// its next change, as status shows them.
func configDiffCmd(now func() time.Time) *cobra.Command {
	var path, format string
	cmd := &cobra.Command{
		Use:   "diff FILE",
		Short: "Print what reloading FILE would change, key by key, and when each change takes effect",
		Long: "Compares FILE with the config at --config (what the daemon runs) and prints every changed key " +
			"with its class: live (applied with the reload), next pass (read by the target's loop at its next " +
			"pass) or restart (a reload is rejected; restart the daemon); then, in text, the schedule entry in force " +
			"now and its next change for each target of FILE with a schedule. Exit 0 when FILE is valid, 1 when " +
			"either file is invalid, 2 when one cannot be read.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q: use text or json", format))
			}
			var cfgs [2]*config.Config
			for i, p := range []string{path, args[0]} {
				cfg, err := config.Load(p)
				learnSecrets(cmd.Context(), cfg, err)
				var cerr *config.Error
				switch {
				case errors.As(err, &cerr):
					return withCode(exitFailure, fmt.Errorf("%s is invalid (run `runner-manager validate --config %s`):\n%w", p, p, err))
				case err != nil:
					return withCode(exitUsage, unreadable(p, err))
				}
				cfgs[i] = cfg
			}
			changes := config.Diff(cfgs[0], cfgs[1])
			out := cmd.OutOrStdout()
			if format == "json" {
				if changes == nil {
					changes = config.Changes{}
				}
				b, err := json.MarshalIndent(changes, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			defer printSchedules(out, cfgs[1], now())
			if len(changes) == 0 {
				fmt.Fprintf(out, "no change: reloading %s would apply nothing\n", args[0])
				return nil
			}
			for _, c := range changes {
				fmt.Fprintln(out, c.String())
			}
			fmt.Fprintf(out, "%d change(s): %d live, %d next pass, %d restart\n", len(changes),
				len(changes.Of(config.Live)), len(changes.Of(config.NextPass)), len(changes.Of(config.Restart)))
			if r := changes.Of(config.Restart); len(r) > 0 {
				fmt.Fprintf(out, "a reload would be rejected: changing %s needs a daemon restart (systemctl restart runner-manager)\n", r.Keys())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "the current config file (.toml, .yaml or .yml)")
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}

// printSchedules writes, for each target of cfg with a schedule, the entry in force at now and
// when that next changes (the line status prints, daemon.ScheduleStatus).
func printSchedules(out io.Writer, cfg *config.Config, now time.Time) {
	for _, t := range cfg.Targets {
		if s := daemon.ScheduleStatus(t, now); s != nil {
			fmt.Fprintf(out, "target %q: %s\n", t.Name, s.Describe(now))
		}
	}
}
