// Package runner owns the process side of a GitHub Actions runner on this host: the cache of
// runner packages (download, sha256 verification, safe extraction, pruning), the per-attempt
// runtime directories materialised from it, the shim that supervises each runner process
// (`runner-manager shim`), and liveness checks that tell a live shim from a reused pid.
//
// It never talks to the GitHub API and never writes the journal: the engine records its intent
// in the journal, obtains the JIT config, then calls Start, and journals the Handle it returns.
// Recovery reads ReadShimState, ExitStatus and Alive to decide whether to adopt or conclude an
// attempt. docs/runner-processes.md describes the runtime layout and the shim protocol.
package runner
