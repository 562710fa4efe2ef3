package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// starterConfig is what `config init` writes: valid as it is (no target yet), every common key
// present or commented. TestConfigInit checks that it validates.
//
//go:embed starter.toml
var starterConfig []byte

func newConfigInitCmd() *cobra.Command {
	var path string
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter config file (refuses to overwrite one)",
		Long: `init writes a starter config to --config (default /etc/runner-manager/config.toml): valid as it
is, with no target yet, and every common key present or commented. Add a [[target]], give it a
credential, then runner-manager validate. An existing file is kept unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return withCode(exitFailure, fmt.Errorf("create the config directory: %w", err))
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o640)
			if errors.Is(err, fs.ErrExist) {
				return withCode(exitUsage, fmt.Errorf("%s already exists; edit it, or pass --force to replace it", path))
			}
			if err != nil {
				return withCode(exitFailure, fmt.Errorf("write the starter config: %w", err))
			}
			_, werr := f.Write(starterConfig)
			if err := errors.Join(werr, f.Close()); err != nil {
				return withCode(exitFailure, fmt.Errorf("write the starter config %s: %w", path, err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: add a [[target]] and a credential, then run: runner-manager validate --config %s\n", path, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "where to write the config file")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}
