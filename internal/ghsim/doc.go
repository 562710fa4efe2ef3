// Package ghsim is the GitHub this project is tested against: a real HTTP server on 127.0.0.1 with
// the REST endpoints runner-manager uses (same paths, status codes, headers and go-github JSON
// shapes), the OAuth device flow, GitHub App installation tokens, rate limits with ETags,
// workflow_job webhooks, fault injection, and a fake runner package served from the
// runner-downloads endpoint.
//
// Tests drive it through the scenario API (CreateOrg, QueueJob, AddToken, AddFault, ...);
// cmd/ghsim exposes the same through /_ghsim/admin/. It never talks to the real GitHub and keeps
// everything in memory.
package ghsim
