package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runner-manager/runner-manager/internal/version"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "runner-manager",
		Short:         "Autoscale GitHub Actions just-in-time runners on this host",
		Version:       version.Current(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(version.String() + "\n")
	// Subcommands: one constructor per file, added here one per line.
	root.AddCommand(
		newServiceCmd(),
		newValidateCmd(), newVerifyCmd(), newDoctorCmd(),
		newStatusCmd(), newRunnersCmd(), newTopCmd(), newReloadCmd(),
		newConfigCmd(),
		newAuthCmd(),
		newLogsCmd(),
		newShimCmd(),
		newDaemonCmd(),
		newVersionCmd(), newManCmd(),
	)
	conventions(root)
	return root
}

// conventions applies what every command of the tree shares, so a new command cannot forget it:
// a group (a command that only holds subcommands) refuses an unknown subcommand with exit 2 instead
// of printing its help and exiting 0, and file flags complete the files they take.
func conventions(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = cobra.ArbitraryArgs // checked in groupRun, which can name the suggestions
		cmd.RunE = groupRun
	}
	complete := func(f *pflag.Flag) {
		if _, done := cmd.GetFlagCompletionFunc(f.Name); done {
			return
		}
		switch f.Name {
		case "config":
			_ = cmd.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions([]string{"toml", "yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt))
		case "root":
			_ = cmd.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs))
		}
	}
	cmd.LocalNonPersistentFlags().VisitAll(complete)
	cmd.PersistentFlags().VisitAll(complete)
	for _, c := range cmd.Commands() {
		conventions(c)
	}
}

// groupRun is the RunE of a command that only groups subcommands.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return withCode(exitUsage, fmt.Errorf("%s (run %s --help for the list)", msg, cmd.CommandPath()))
}

// choiceFlag defines a string flag that takes one of values, which the shell completes; the
// command itself still refuses any other value (exit 2).
func choiceFlag(cmd *cobra.Command, p *string, name, def, usage string, values ...string) {
	cmd.Flags().StringVar(p, name, def, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
