// Command runner-manager autoscales GitHub Actions just-in-time runners on one host.
// This package is thin: it parses flags, wires real implementations together and maps errors to
// the stable exit codes of exitcodes.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/redact"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// exitError carries an exit code from a subcommand up to main without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code to err; a nil err with a code means "already reported, just exit".
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func run(args []string) int { return runCommand(newRootCmd(), args, os.Stdin, os.Stdout, os.Stderr) }

// runCommand runs cmd (the root; a test may give one command) as main does and returns the exit
// code. Everything it writes, its exit message included, passes one redact.Redactor, which each
// command teaches the secrets of the configs it loads (learnSecrets): no output shows a
// credential's shape nor a secret file's content, wherever in the config it was typed.
func runCommand(cmd *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	red := redact.New()
	cmd.SetIn(stdin)
	cmd.SetOut(red.Writer(stdout))
	cmd.SetErr(red.Writer(stderr))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(redact.NewContext(context.Background(), red))
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "runner-manager:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown flag, wrong argument count) are usage errors.
	fmt.Fprintln(cmd.ErrOrStderr(), "runner-manager:", err)
	return exitUsage
}

// learnSecrets teaches the command's Redactor the secrets of a load's outcome (config.Secrets):
// call it before printing anything about that load.
func learnSecrets(ctx context.Context, cfg *config.Config, err error) {
	r := redact.FromContext(ctx)
	paths, values := config.Secrets(cfg, err)
	r.LearnFiles(paths...)
	r.Learn(values...)
}
