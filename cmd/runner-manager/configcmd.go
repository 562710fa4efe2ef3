package main

import (
	"encoding/json"
	"errors"
	"fmt"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
)

// newConfigCmd is `runner-manager config`, home of `config print`.
func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cmd.AddCommand(newConfigPrintCmd())
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
