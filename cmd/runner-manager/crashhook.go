package main

import (
	"os"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/engine"
)

// crashEnv names the crash points at which the daemon kills itself (SIGKILL; on Windows
// TerminateProcess), for the crash tests (make test-crash, e2e): "after-jit" or
// "after-jit,mid-clean". Never set it in production.
const crashEnv = "RUNNER_MANAGER_TEST_CRASH_AT"

// callTimeoutEnv shortens the engine's call timeout (a Go duration), for the crash tests: a
// runner planned when the daemon was killed keeps its slot for one call timeout (docs/engine.md,
// recovery), longer than a crash round may wait for a job. Never set it in production.
const callTimeoutEnv = "RUNNER_MANAGER_TEST_CALL_TIMEOUT"

func callTimeoutFromEnv() time.Duration {
	d, err := time.ParseDuration(os.Getenv(callTimeoutEnv))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

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
			// SIGKILL on Unix, TerminateProcess on Windows: no deferred call, no cleanup.
			if self, err := os.FindProcess(os.Getpid()); err == nil {
				_ = self.Kill()
			}
			select {} // the kill is on its way
		}
	}
}
