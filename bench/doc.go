// Package bench holds runner-manager's cross-package benchmarks and the config generator the
// `make bench` program (bench/cmd/benchmark) shares with them. The benchmarks run only with
// -bench (plain `go test` runs none of them); they use in-memory fakes, the GitHub simulator on
// 127.0.0.1 and temporary directories, never the real GitHub.
package bench
