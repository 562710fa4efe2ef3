//go:build e2e

// Package crash is the fault-injection suite of DESIGN.md promises 1-3 on the real binary: it kills
// the daemon with SIGKILL at every labelled point of a runner's lifecycle (RUNNER_MANAGER_TEST_CRASH_AT,
// engine.CrashPoint) and at random moments under load, restarts it on the same state directory, and
// checks that recovery leaves no orphan registration, process, runtime directory or journal attempt,
// that no busy runner is killed, that capacity is never exceeded and that every queued job runs once.
//
// It owns only these tests and the few helpers e2e/harness lacks (crash evidence, run-once checks,
// failure dumps). It never edits the daemon's state directory and never signals a runner itself.
// Run it with `make test-crash ROUNDS=N` (build tag e2e).
package crash
