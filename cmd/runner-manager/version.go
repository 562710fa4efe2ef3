package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/version"
)

// newVersionCmd is `runner-manager version`: the build's identity for bug reports and inventory.
// `--version` stays the one-line form selfupdate reads from a candidate binary.
func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and build date of this binary",
		Long: `version prints what this binary was built from. A release build (make build) carries the
values it was linked with; a go install or go build falls back to the Go build info (the module
version, the git revision and its time). --json prints the same as one JSON object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			commit := orUnknown(info.Commit)
			if info.Modified {
				commit += " (modified)"
			}
			fmt.Fprintf(out, "runner-manager %s\n  commit:     %s\n  built:      %s\n  go version: %s\n  platform:   %s\n",
				info.Version, commit, orUnknown(info.Date), info.GoVersion, info.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
