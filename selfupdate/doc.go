// Package selfupdate replaces the runner-manager binary under a running service without interrupting
// a job (DESIGN.md promises 5 and 6).
//
// The service runs a private copy of the binary, so a package manager can replace the source path at
// any time. A Watcher stats the source cheaply and confirms a changed file by running it with
// --version; an Orchestrator waits for the engine's upgrade drain (no deadline of its own; max_job_duration bounds each job), an Installer swaps the
// private copy with rollback, and the daemon exits with the "upgrade pending" code so the service
// manager starts the new binary. A Guard rolls a crash-looping new binary back to the previous one.
//
// On Windows, which refuses to replace or remove a running executable but lets it be renamed, the
// Installer renames the running binary aside to ".old" before the new one takes its name, a
// rollback renames the crash-looping one to ".rejected" (removed at the next start), and the source
// passes an ACL check (internal/fileacl) in place of StrictModes.
//
// It owns the private binary, its ".old" sibling and the guard's state file. It never imports the
// engine (it declares the Drainer it needs), never talks to GitHub, and never kills a runner.
package selfupdate
