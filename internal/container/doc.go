// Package container runs one GitHub Actions runner per container through the Docker Engine API
// on a unix socket: it creates the container (labelled with host id, attempt and target, as a
// slot's unprivileged uid, never privileged, never with the host's socket), starts it, reads its
// state and exit status (out-of-memory included) by inspecting it, and removes it after its one
// job. It lists this host's containers by label for recovery.
//
// It never decides when: the engine's journal records the intent (the container's name) before
// Start creates anything, and recovery calls back into it (docs/runner-processes.md,
// "Container runners"). Image pulls, registry credentials and the Docker-in-Docker sidecar plug
// in through ImageSource and are their own files.
package container
