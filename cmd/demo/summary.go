package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// result is what the summary reports.
type result struct {
	Queued      int
	Completed   int
	Conclusions map[string]int  // conclusion -> jobs
	Latencies   []time.Duration // job queued -> in progress, for every job that started
	Launched    int             // JIT registrations seen
	Peak        int             // most runners registered at once
	MaxRunners  int             // daemon.max_runners
	DaemonErr   error           // how the daemon's process ended after SIGTERM
	DaemonSaid  string          // its "daemon stopped; ..." line
	Leaks       leaks
}

// fill copies what the tracker saw about the queued jobs into r.
func (r *result) fill(t *tracker, ids []int64) {
	r.Queued, r.Completed = len(ids), t.completed(ids)
	r.Conclusions, r.Latencies = map[string]int{}, nil
	for _, id := range ids {
		j := t.jobs[id]
		if j.Status == ghsim.StatusCompleted {
			r.Conclusions[j.Conclusion]++
		}
		if !j.StartedAt.IsZero() {
			r.Latencies = append(r.Latencies, j.StartedAt.Sub(j.CreatedAt))
		}
	}
	r.Launched, r.Peak = t.started, t.peak
}

// completed counts the jobs of ids that have completed.
func (t *tracker) completed(ids []int64) int {
	n := 0
	for _, id := range ids {
		if t.jobs[id].Status == ghsim.StatusCompleted {
			n++
		}
	}
	return n
}

// failure says why the run does not count as a success, or nil.
func (r result) failure() error {
	var why []string
	if r.Completed < r.Queued {
		why = append(why, fmt.Sprintf("%d of %d jobs did not complete", r.Queued-r.Completed, r.Queued))
	}
	if r.MaxRunners > 0 && r.Peak > r.MaxRunners {
		why = append(why, fmt.Sprintf("%d runners were registered at once, above max_runners %d", r.Peak, r.MaxRunners))
	}
	if n := r.Leaks.count(); n > 0 {
		why = append(why, fmt.Sprintf("%s: %d (listed above)", errLeaked, n))
	}
	if r.DaemonErr != nil {
		why = append(why, fmt.Sprintf("the daemon did not stop cleanly: %v", r.DaemonErr))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(why, "; "))
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of ds; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	rank := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	return s[max(rank, 1)-1]
}

func printSummary(w io.Writer, r result) {
	var concl []string
	for _, c := range slices.Sorted(maps.Keys(r.Conclusions)) {
		concl = append(concl, fmt.Sprintf("%d %s", r.Conclusions[c], c))
	}
	fmt.Fprintln(w, "\nsummary")
	fmt.Fprintf(w, "  jobs queued        %d\n", r.Queued)
	detail := ""
	if len(concl) > 0 {
		detail = " (" + strings.Join(concl, ", ") + ")"
	}
	fmt.Fprintf(w, "  jobs completed     %d of %d%s\n", r.Completed, r.Queued, detail)
	if len(r.Latencies) == 0 {
		fmt.Fprintln(w, "  scale-up latency   none: no job was picked up")
	} else {
		fmt.Fprintf(w, "  scale-up latency   p50 %s, p95 %s (job queued -> in progress, %d jobs)\n",
			roundDur(percentile(r.Latencies, 50)), roundDur(percentile(r.Latencies, 95)), len(r.Latencies))
	}
	fmt.Fprintf(w, "  runners launched   %d\n", r.Launched)
	fmt.Fprintf(w, "  peak runners       %d at once (max_runners %d)\n", r.Peak, r.MaxRunners)
	if r.DaemonSaid != "" {
		fmt.Fprintf(w, "  daemon             %s\n", r.DaemonSaid)
	}
	fmt.Fprint(w, r.Leaks.String())
	fmt.Fprintf(w, "  runners leaked: %d\n", r.Leaks.count())
}
