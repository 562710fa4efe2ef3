// Package engine owns the supervisor of runner-manager: it diffs each new config snapshot against
// the running target loops (Apply), runs one reconcile pass after another per target (demand ->
// plan -> launch/reap/conclude), drains targets on removal, shutdown and upgrade, and performs
// startup recovery from the journal.
//
// It never talks to GitHub, the filesystem or processes itself: it calls the small interfaces it
// declares here (Journal, Demand, Registrar, Launcher, Clock), which internal/daemon wires to
// journal, internal/github and internal/runner. It never kills a runner that may be busy.
package engine
