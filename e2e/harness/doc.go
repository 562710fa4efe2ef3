// Package harness runs the real runner-manager binary against an in-process GitHub simulator
// (internal/ghsim) with fake runners, for the end-to-end suites under e2e/. It owns building the
// binary once per test process, starting the simulator and the daemon, writing config files the ways
// operators do (in place, by rename, by a Kubernetes ConfigMap symlink swap), reading the daemon's
// log and status, and checking DESIGN.md's promises afterwards: no leak, capacity never exceeded, no
// busy runner killed.
//
// It is an ordinary (non-test) package so e2e suites in several packages can share it. It never
// talks to the real GitHub, never edits the daemon's state directory itself, and leaves no process
// behind: every daemon it starts, and every runner process under that daemon's state directory, is
// killed when the test ends.
package harness
