package main

import "testing"

// TestDaemonGCPercent: the daemon collects at GOGC=25 (its goal counts the target loops' stacks,
// docs/operations.md), unless the operator's environment sets GOGC, which then stands.
func TestDaemonGCPercent(t *testing.T) {
	for _, tc := range []struct {
		gogc string
		want int
		set  bool
	}{{"", daemonGCPercent, true}, {"100", 0, false}, {"off", 0, false}} {
		p, set := gcPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if p != tc.want || set != tc.set {
			t.Errorf("GOGC=%q: gcPercent = %d, %v; want %d, %v", tc.gogc, p, set, tc.want, tc.set)
		}
	}
}
