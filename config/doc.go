// Package config owns the operator's configuration: the schema, loading it from TOML or YAML with
// RUNNER_MANAGER_* environment overrides and defaults, validation with positioned errors, and watching
// the file for changes. It produces immutable *Config snapshots and imports nothing of this module.
package config
