// Package service runs runner-manager as a system service: it generates the systemd unit (Linux)
// and the launchd plist (macOS), or registers the Windows service with the service control manager
// (through the SCM interface), installs them with a private copy of the binary for selfupdate to
// swap, starts and stops the service through the service manager, and gathers `service status`.
// On Windows it also runs the daemon under the SCM's controls (Controlled, RunWindowsService).
//
// It never runs the daemon itself (on Windows, Controlled relays the SCM's controls to the daemon
// the CLI hands it), never kills a runner (the unit's KillMode=process and the plist's
// AbandonProcessGroup leave runners alive when the daemon stops), and never removes the state
// directory: the journal there is what lets a reinstalled daemon adopt runners left behind.
// Every path is injectable and every systemctl/launchctl call goes through an injected runner (the
// SCM's through Manager.SCM), so tests run in a temp root without a service manager.
package service
