//go:build windows

package main

import "os"

// resizeSignals: a Windows console's resize is an input event, not a signal.
var resizeSignals []os.Signal
