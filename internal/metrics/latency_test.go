package metrics

import (
	"testing"
	"time"
)

func TestQueueLatency(t *testing.T) {
	for _, tc := range []struct {
		name          string
		waits         []int // seconds, in the order jobs were seen
		p50, p95, got int
	}{
		{"none", nil, 0, 0, 0},
		{"one", []int{7}, 7, 7, 1},
		{"ten", []int{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 5, 10, 10},
		// 150 jobs: only the latest 100 (seconds 51..150) count.
		{"window", seq(1, 150), 100, 145, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New("test")
			for _, s := range tc.waits {
				m.ObserveScaleUp("web", StageQueuedToInProgress, time.Duration(s)*time.Second)
				m.ObserveScaleUp("web", StageQueuedToStarted, time.Hour) // other stages do not count
			}
			p50, p95, n := m.QueueLatency("web")
			if p50 != time.Duration(tc.p50)*time.Second || p95 != time.Duration(tc.p95)*time.Second || n != tc.got {
				t.Fatalf("QueueLatency = %s, %s, %d; want %ds, %ds, %d", p50, p95, n, tc.p50, tc.p95, tc.got)
			}
			m.ForgetTarget("web")
			if _, _, n := m.QueueLatency("web"); n != 0 {
				t.Fatalf("after ForgetTarget: %d jobs kept", n)
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
