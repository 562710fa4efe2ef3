package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/runner-manager/runner-manager/internal/version"
)

// newManCmd is the hidden `runner-manager man DIR` that `make man` and packagers run: one page per
// command (runner-manager.1, runner-manager-validate.1, ...) generated from the same help text the
// commands print, so the pages never drift from --help.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages (section 1) into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return withCode(exitFailure, fmt.Errorf("create the man page directory: %w", err))
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // keeps the pages reproducible: no generation date
			header := &doc.GenManHeader{Title: "RUNNER-MANAGER", Section: "1", Source: "runner-manager " + version.Current(), Manual: "runner-manager manual"}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return withCode(exitFailure, fmt.Errorf("write the man pages into %s: %w", args[0], err))
			}
			return nil
		},
	}
}
