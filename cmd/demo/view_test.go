package main

import (
	"slices"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func TestTrackerObserve(t *testing.T) {
	queued := ghsim.Job{ID: 17, Repo: "acme/api", Labels: []string{"self-hosted", "linux"}, Status: ghsim.StatusQueued, CreatedAt: at(1)}
	running := queued
	running.Status, running.StartedAt, running.RunnerName = ghsim.StatusInProgress, at(2.4), "rm-1"
	done := running
	done.Status, done.Conclusion, done.CompletedAt = ghsim.StatusCompleted, "success", at(5.5)
	reg := ghsim.Registration{Name: "rm-1", Scope: "acme/api", Labels: []string{"self-hosted", "linux"}, RegisteredAt: at(0.5)}
	online := reg
	online.Online = true
	removed := online
	removed.RemovedAt, removed.RemovedBy = at(6), "ephemeral"
	deleted := online
	deleted.RemovedAt, deleted.RemovedBy = at(6), "delete"
	runner := []ghsim.Runner{{Name: "rm-1"}}

	tests := []struct {
		name  string
		steps []snapshot
		want  [][]string // per step: "kind text" lines
		peak  int
	}{
		{
			name:  "a job's whole life seen step by step",
			steps: []snapshot{{Registrations: []ghsim.Registration{reg}, Runners: runner}, {Jobs: []ghsim.Job{queued}, Registrations: []ghsim.Registration{online}, Runners: runner}, {Jobs: []ghsim.Job{running}, Registrations: []ghsim.Registration{online}, Runners: runner}, {Jobs: []ghsim.Job{done}, Registrations: []ghsim.Registration{removed}}},
			want: [][]string{
				{"runner rm-1 registered for acme/api [self-hosted linux]"},
				{"queued acme/api #17 [self-hosted linux]", "runner rm-1 online"},
				{"running acme/api #17 on rm-1 (picked up after 1.4s)"},
				{"done acme/api #17 success (ran 3.1s)", "gone rm-1 removed after its job (ephemeral)"},
			},
			peak: 1,
		},
		{
			name:  "a job seen only when done still reports every step, in time order",
			steps: []snapshot{{Jobs: []ghsim.Job{done}, Registrations: []ghsim.Registration{deleted}}},
			want: [][]string{{
				"runner rm-1 registered for acme/api [self-hosted linux]",
				"queued acme/api #17 [self-hosted linux]",
				"running acme/api #17 on rm-1 (picked up after 1.4s)",
				"done acme/api #17 success (ran 3.1s)",
				"gone rm-1 deregistered by runner-manager",
				"runner rm-1 online",
			}},
		},
		{
			name:  "nothing new, nothing printed",
			steps: []snapshot{{Jobs: []ghsim.Job{running}}, {Jobs: []ghsim.Job{running}}},
			want:  [][]string{{"queued acme/api #17 [self-hosted linux]", "running acme/api #17 on rm-1 (picked up after 1.4s)"}, nil},
		},
		{
			name:  "peak counts runners registered at once",
			steps: []snapshot{{Runners: []ghsim.Runner{{Name: "a"}, {Name: "b"}}}, {Runners: []ghsim.Runner{{Name: "c"}}}},
			want:  [][]string{nil, nil},
			peak:  2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker()
			for i, s := range tc.steps {
				var got []string
				for _, e := range tr.observe(s, at(10)) {
					got = append(got, e.Kind+" "+e.Text)
				}
				if !slices.Equal(got, tc.want[i]) {
					t.Errorf("step %d:\n got %q\nwant %q", i, got, tc.want[i])
				}
			}
			if tr.peak != tc.peak {
				t.Errorf("peak = %d, want %d", tr.peak, tc.peak)
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	e := event{At: time.Date(2026, 1, 1, 12, 0, 3, 0, time.Local), Kind: "running", Text: "acme/api #17 on rm-1"}
	if got, want := e.String(), "12:00:03  running  acme/api #17 on rm-1"; got != want {
		t.Errorf("event line = %q, want %q", got, want)
	}
}

func TestTrackerDone(t *testing.T) {
	tr := newTracker()
	tr.observe(snapshot{Jobs: []ghsim.Job{{ID: 1, Status: ghsim.StatusCompleted}, {ID: 2, Status: ghsim.StatusInProgress}}}, t0)
	if !tr.done([]int64{1}) || tr.done([]int64{1, 2}) || tr.done([]int64{3}) {
		t.Error("done must hold exactly when every listed job has completed")
	}
	if n := tr.completed([]int64{1, 2, 3}); n != 1 {
		t.Errorf("completed = %d, want 1", n)
	}
	if roundDur(-time.Second) != "0.0s" || roundDur(1449*time.Millisecond) != "1.4s" {
		t.Error("a negative latency (clock skew) prints as 0s")
	}
}
