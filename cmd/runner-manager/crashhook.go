package main

import (
	"os"
	"strings"
	"syscall"

	"github.com/runner-manager/runner-manager/engine"
)

// crashEnv names the crash points at which the daemon kills itself with SIGKILL, for the crash
// tests (make test-crash, e2e): "after-jit" or "after-jit,mid-clean". Never set it in production.
const crashEnv = "RUNNER_MANAGER_TEST_CRASH_AT"

func crashHookFromEnv() engine.CrashHook {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		return nil
	}
	points := map[engine.CrashPoint]bool{}
	for _, p := range strings.Split(spec, ",") {
		points[engine.CrashPoint(strings.TrimSpace(p))] = true
	}
	return func(p engine.CrashPoint, _ string) {
		if points[p] {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
