// Package config owns the operator's configuration: the schema, loading it from TOML or YAML with
// RUNNER_MANAGER_* environment overrides and defaults, validation with positioned errors, and watching
// the file for changes. It produces immutable *Config snapshots and imports nothing of this module
// but internal/redact (a leaf: the credential shapes and the bounding of echoed values, applied to
// every problem).
package config

// docs/config.schema.json is generated from the structs and their doc comments; TestSchema fails
// when it is stale.
//go:generate go test -run TestSchema -update .
