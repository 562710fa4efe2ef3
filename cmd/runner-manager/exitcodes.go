package main

// Exit codes are part of the CLI's contract: scripts, CI jobs and service managers act on them.
// They are documented in docs/exit-codes.md; never renumber one.
const (
	exitOK             = 0  // success; for validate: the config is valid
	exitFailure        = 1  // for validate: the config is invalid; otherwise a failure not classed below
	exitUsage          = 2  // bad flags or arguments, or an input file that cannot be read
	exitConflict       = 3  // another runner-manager daemon holds the state directory
	exitNotAuthed      = 4  // no usable GitHub credential (run `runner-manager auth login` or fix the token/App files)
	exitLocalState     = 5  // the state directory or journal cannot be used (permissions, corruption, full disk)
	exitNotReady       = 6  // verify: a target lacks a permission, scope, repository or runner group
	exitUnavailable    = 7  // verify: GitHub could not be reached, failed or rate-limited; try again
	exitNotRunning     = 8  // reload: no daemon is running at the status socket (or endpoint file) to ask
	exitUpgradePending = 75 // a verified upgrade was installed; the service manager must start the new binary
)
