// Package figures records the series behind docs/benchmarks.md's plots (per-job latencies,
// requests per second, RSS samples) as one JSON file per benchmark part, and renders SVG figures
// from every recorded file with gonum.org/v1/plot. Recording and rendering are apart so a figure
// can be re-rendered (`make plots`) without re-running the benchmark that measured it, and a run of
// one part (-only) replaces that part's file and keeps the others'.
package figures

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Part is what one benchmark part recorded for the figures.
type Part struct {
	Part    string    `json:"part"`    // the -only name that measures it
	Command string    `json:"command"` // how the benchmark that measured it was invoked
	Date    time.Time `json:"date"`
	// Latency is one series per scale-up run: each job's queued -> in progress time.
	Latency []Latency `json:"latency,omitempty"`
	// Requests is one series per run: REST requests the daemon sent in each second of its window.
	Requests []Requests `json:"requests,omitempty"`
	// RSS is one series per daemon: its RSS sampled every second of its window.
	RSS []RSS `json:"rss,omitempty"`
}

// Latency is one run's per-job latencies, in seconds.
type Latency struct {
	Label   string    `json:"label"`
	Seconds []float64 `json:"seconds"`
}

// Requests is one run's requests, counted in each second from the start of its window.
type Requests struct {
	Label     string `json:"label"`
	PerSecond []int  `json:"per_second"`
}

// RSS is one daemon's resident memory, in KiB, read every second from the start of its window.
type RSS struct {
	Label   string `json:"label"`
	Targets int    `json:"targets"`
	KiB     []int  `json:"kib"`
	MaxKiB  int    `json:"max_kib"`
}

// Write stores p as dir/<part>.json, replacing what an earlier run of that part recorded.
func Write(dir string, p Part) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, p.Part+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	return os.Rename(tmp, path)
}

// Read loads every part recorded in dir, in the order of their file names.
func Read(dir string) ([]Part, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var parts []Part
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("figures: %w", err)
		}
		var p Part
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("figures: %s is not a recorded part (delete it or re-run its part): %w", path, err)
		}
		if p.Part == "" {
			return nil, fmt.Errorf("figures: %s names no part (delete it or re-run its part)", path)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("figures: no recorded series in %s (run make bench, or one part with -only, first)", dir)
	}
	return parts, nil
}

// commands are the distinct commands that measured the parts, each with its date, for a title.
func commands(parts []Part) []string {
	var out []string
	for _, p := range parts {
		c := fmt.Sprintf("%s (%s UTC)", p.Command, p.Date.UTC().Format("2006-01-02 15:04"))
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// caption is the command lines under a figure's title.
func caption(parts []Part) string {
	return "made by: " + strings.Join(commands(parts), "\n")
}
