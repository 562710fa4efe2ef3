//go:build windows

package main

import "os"

// maxRSSKiB is not measured on Windows (an exited process's usage there has times only); the
// bench's figures come from Linux (docs/benchmarks.md).
func maxRSSKiB(*os.ProcessState) int64 { return 0 }
