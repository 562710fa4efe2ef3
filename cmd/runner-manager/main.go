// Command runner-manager autoscales GitHub Actions just-in-time runners on one host.
// This package is thin: it parses flags, wires real implementations together and maps errors to
// the stable exit codes of exitcodes.go.
package main

import (
	"errors"
	"fmt"
	"os"
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

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(root.ErrOrStderr(), "runner-manager:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown flag, wrong argument count) are usage errors.
	fmt.Fprintln(root.ErrOrStderr(), "runner-manager:", err)
	return exitUsage
}
