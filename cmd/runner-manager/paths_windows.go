//go:build windows

package main

import "github.com/runner-manager/runner-manager/internal/service"

// defaultConfigPath is where operators keep the config; every subcommand's --config defaults to
// it: on Windows the service's, %ProgramData%\runner-manager\config.toml.
var defaultConfigPath = service.DefaultPaths(service.Windows).ConfigFile
