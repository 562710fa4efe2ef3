package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/bench/figures"
)

// figuresDir is where the recorded series and the SVG figures go: -figures, or "figures" beside
// the markdown file this run writes (docs/figures for make bench); "" when the markdown goes to
// stdout and no -figures was given (nothing recorded).
func figuresDir(o options) string {
	switch {
	case o.figures != "":
		return o.figures
	case o.update != "":
		return filepath.Join(filepath.Dir(o.update), "figures")
	case o.out != "-":
		return filepath.Join(filepath.Dir(o.out), "figures")
	}
	return ""
}

// recordFigures writes the series this run measured (one file per part, replacing that part's
// earlier recording) and renders every figure from all recorded parts. A run that measured none
// (-only journal) leaves the figures as they are.
func recordFigures(dir string, r results) ([]figures.Drawn, error) {
	parts := r.figureParts()
	if len(parts) == 0 {
		return nil, nil
	}
	for _, p := range parts {
		if err := figures.Write(dir, p); err != nil {
			return nil, err
		}
	}
	return figures.Render(dir)
}

// plotsOnly redraws the figures from the series recorded in figuresDir(o), measuring nothing;
// with -update it also rewrites that file's Figures section (which runs drew each figure).
func plotsOnly(o options, argv []string) error {
	dir := figuresDir(o)
	if dir == "" {
		return fmt.Errorf("-plots-only needs -figures DIR (docs/figures), or -out or -update to find it beside")
	}
	drawn, err := figures.Render(dir)
	for _, d := range drawn {
		fmt.Fprintf(os.Stderr, "benchmark: wrote %s (from %s)\n", filepath.Join(dir, d.File), strings.Join(d.Commands, "; "))
	}
	if err != nil || o.update == "" {
		return err
	}
	doc, err := os.ReadFile(o.update)
	if err != nil {
		return fmt.Errorf("-update: %w", err)
	}
	var part bytes.Buffer
	results{Figures: drawn}.renderSections(func(format string, a ...any) { fmt.Fprintf(&part, format, a...) })
	note := fmt.Sprintf("Redrawn without measuring: `%s` (%s UTC).", strings.Join(append([]string{"bin/benchmark"}, argv[1:]...), " "),
		time.Now().UTC().Format("2006-01-02 15:04"))
	tmp := o.update + ".tmp"
	if err := os.WriteFile(tmp, splice(doc, part.Bytes(), note, nil), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, o.update)
}

// figureParts are this run's series, by the part (-only name) that measured them.
func (r results) figureParts() []figures.Part {
	var parts []figures.Part
	add := func(name string) *figures.Part {
		for i := range parts {
			if parts[i].Part == name {
				return &parts[i]
			}
		}
		parts = append(parts, figures.Part{Part: name, Command: r.Command, Date: r.Machine.Date})
		return &parts[len(parts)-1]
	}
	for _, s := range r.ScaleUp {
		p := add(s.Mode)
		secs := make([]float64, len(s.Latencies))
		for i, l := range s.Latencies {
			secs[i] = l.Seconds()
		}
		p.Latency = append(p.Latency, figures.Latency{Label: s.label(), Seconds: secs})
		p.Requests = append(p.Requests, figures.Requests{Label: fmt.Sprintf("%s, %d jobs every %s", s.label(), s.Jobs, s.Spacing), PerSecond: s.PerSecond})
	}
	for _, s := range r.Idle {
		p := add(fmt.Sprintf("idle%d", s.Targets))
		p.Requests = append(p.Requests, figures.Requests{Label: fmt.Sprintf("idle, %d targets, poll_interval %s", s.Targets, s.Poll), PerSecond: s.PerSecond})
		p.RSS = append(p.RSS, figures.RSS{Label: fmt.Sprintf("%d idle targets (%s window)", s.Targets, s.Window.Round(time.Second)), Targets: s.Targets, KiB: s.RSSSeries, MaxKiB: s.RSSMax})
	}
	for _, m := range r.Memory {
		p := add(fmt.Sprintf("idle%d-30m", m.Targets))
		p.Requests = append(p.Requests, figures.Requests{Label: fmt.Sprintf("idle, %d targets, %s run", m.Targets, m.Window), PerSecond: m.PerSecond})
		p.RSS = append(p.RSS, figures.RSS{Label: fmt.Sprintf("%d idle targets (%s run)", m.Targets, m.Window), Targets: m.Targets, KiB: m.RSSSeries, MaxKiB: m.RSSMax})
	}
	return parts
}

// figure links an SVG beside its table, with what it shows and how to redraw it.
func figure(p printer, file, what string) {
	p("![%s](figures/%s)\n\n", what, file)
	p("*Figure `figures/%s`: %s. Its title names the benchmark commands whose recorded series\n", file, what)
	p("(`figures/*.json`) it draws; `make plots` redraws it from them without measuring (section \"Figures\").*\n\n")
}

// renderFigures is the section that says which run each figure's data comes from.
func (r results) renderFigures(p printer) {
	p("%s", figuresIntro)
	// A list, not a table: splice keeps old table rows by the -only parts their commands name.
	for _, d := range r.Figures {
		p("- [%s](figures/%s), drawn from: `%s`\n", d.File, d.File, strings.Join(d.Commands, "`; `"))
	}
	p("\n")
}

// requestSampler counts the daemon's requests in each second until stopped: the series of the
// requests-per-minute figure.
func (w *world) requestSampler() (stop func() []int) {
	quit, out := make(chan struct{}), make(chan []int)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var per []int
		last := w.count.snapshot().Requests
		for {
			select {
			case <-quit:
				out <- per
				return
			case <-t.C:
				n := w.count.snapshot().Requests
				per, last = append(per, n-last), n
			}
		}
	}()
	return func() []int {
		close(quit)
		return <-out
	}
}

// figuresIntro opens the Figures section: how the figures are made and redrawn.
const figuresIntro = "## Figures\n\n" +
	"`make bench` (and a run with `-only`) records the series behind the figures, one file per part, in\n" +
	"`docs/figures/<part>.json` (per-job latencies, requests in each second, RSS read every second), then\n" +
	"draws every figure from all recorded parts with `gonum.org/v1/plot`; a run of some parts replaces\n" +
	"their files and keeps the others'. `make plots` (`go run ./bench/cmd/benchmark -plots-only -figures\n" +
	"docs/figures -update docs/benchmarks.md`) redraws the SVGs and this list from the recorded files alone.\n" +
	"Each figure's title names the same commands.\n" +
	"A table row measured by a run older than the figures (issue 32) has no recorded series: its part is in\n" +
	"no figure until it runs again, so a figure may show fewer runs than its table.\n\n"
