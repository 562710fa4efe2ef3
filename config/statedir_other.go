//go:build !windows

package config

// DefaultStateDir is daemon.state_dir's default (systemd's StateDirectory=runner-manager).
const DefaultStateDir = "/var/lib/runner-manager"
