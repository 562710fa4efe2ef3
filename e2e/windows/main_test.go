//go:build e2e && linux

// Package windows is the end-to-end suite of runner-manager's Windows build, run under wine on
// Linux (issue 33 item 4): runner-manager.exe cross-built for windows/amd64 runs `version` and
// `validate --offline`, and its daemon runs one job against the simulator (native, on 127.0.0.1)
// with the fake runner built for Windows. It needs `make wine-tools` (wine 8.0, the ProcessPrng
// DLL, the prefix under bin/); without them every test fails saying so. docs/testing.md, "Windows
// binaries under wine", says what runs here and what wine cannot show.
package windows

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) {
	harness.Main(m, stopWine)
}
