//go:build !windows

package main

// defaultConfigPath is where operators keep the config; every subcommand's --config defaults to it.
const defaultConfigPath = "/etc/runner-manager/config.toml"
