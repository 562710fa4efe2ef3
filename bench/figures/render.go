package figures

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The figures' files, next to their data in the figures directory; docs/benchmarks.md links them.
const (
	LatencyFile    = "latency.svg"
	RequestsFile   = "requests.svg"
	RSSTargetsFile = "rss-targets.svg"
	RSSTimeFile    = "rss-time.svg"
)

// Axis labels (the test checks each figure shows its own).
const (
	latencyX    = "queued -> in progress (s, log scale)"
	latencyY    = "fraction of jobs started"
	requestsX   = "minutes from the start of the window"
	requestsY   = "REST requests per minute"
	rssTargetsX = "idle targets (log scale)"
	rssTargetsY = "RSS (MiB)"
	rssTimeX    = "minutes from the start of the window"
	rssTimeY    = "RSS (MiB)"
)

// figure is one SVG: its title and axes, which parts feed it and how it is drawn from them. Every
// figure's y axis starts at 0.
type figure struct {
	file  string
	title string
	x, y  string // the axes' labels
	has   func(Part) bool
	draw  func(*plot.Plot, []Part) error
}

var all = []figure{
	{LatencyFile, "Scale-up latency distribution", latencyX, latencyY, func(p Part) bool { return len(p.Latency) > 0 }, drawLatency},
	{RequestsFile, "REST requests per minute over a run", requestsX, requestsY, func(p Part) bool { return len(p.Requests) > 0 }, drawRequests},
	{RSSTargetsFile, "Daemon RSS against idle targets", rssTargetsX, rssTargetsY, func(p Part) bool { return len(p.RSS) > 0 }, drawRSSTargets},
	{RSSTimeFile, "Daemon RSS over time", rssTimeX, rssTimeY, func(p Part) bool { return len(p.RSS) > 0 }, drawRSSTime},
}

// Drawn is one figure Render wrote: its file name in the directory and the commands (with their
// dates) that measured the series it draws.
type Drawn struct {
	File     string
	Commands []string
}

// Render draws every figure some recorded part in dir feeds as an SVG in dir, and says which it
// wrote. A figure no part feeds is not written (and an old file of it is left alone).
func Render(dir string) ([]Drawn, error) {
	parts, err := Read(dir)
	if err != nil {
		return nil, err
	}
	var wrote []Drawn
	for _, f := range all {
		var feed []Part
		for _, p := range parts {
			if f.has(p) {
				feed = append(feed, p)
			}
		}
		if len(feed) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = f.title + "\n" + caption(feed)
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Label.Text, p.Y.Label.Text = f.x, f.y
		p.Y.Min = 0
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		if err := f.draw(p, feed); err != nil {
			return wrote, fmt.Errorf("figures: %s: %w", f.file, err)
		}
		if err := save(p, filepath.Join(dir, f.file)); err != nil {
			return wrote, fmt.Errorf("figures: %s: %w", f.file, err)
		}
		wrote = append(wrote, Drawn{File: f.file, Commands: commands(feed)})
	}
	return wrote, nil
}

// save writes p as SVG. gonum/plot panics on data it cannot draw (a log axis reaching 0); a
// figure must not take the benchmark's measurements down with it, so that is an error here.
func save(p *plot.Plot, path string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("cannot draw it: %v", v)
		}
	}()
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

// logRange pads a log axis around its data, lo to hi: gonum widens a one-value range by 1 either
// side, which reaches 0 at 1 and cannot be drawn on a log scale.
func logRange(a *plot.Axis, lo, hi float64) {
	a.Scale, a.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	a.Min, a.Max = lo/2, hi*2
}

// lines adds one labelled line for each series of the parts (of picks a part's), each in the next
// colour and dash pattern; points draws a series, and one with no points is left out.
func lines[S any](p *plot.Plot, parts []Part, of func(Part) []S, step bool, points func(S) (string, plotter.XYs)) error {
	i := 0
	for _, part := range parts {
		for _, s := range of(part) {
			label, xys := points(s)
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
			l.Color, l.Dashes = plotutil.Color(i), plotutil.Dashes(i)
			if step {
				l.StepStyle = plotter.PostStep
			}
			p.Add(l)
			p.Legend.Add(label, l)
			i++
		}
	}
	return nil
}

// drawLatency is each run's empirical distribution: the fraction of its jobs started within x
// seconds. Log scale, since a webhook's tenth of a second and an idle poll's minute share it.
func drawLatency(p *plot.Plot, parts []Part) error {
	p.Y.Max = 1
	p.Legend.Left = true // the curves end at the top right
	lo, hi := math.Inf(1), 0.0
	err := lines(p, parts, func(part Part) []Latency { return part.Latency }, true, func(l Latency) (string, plotter.XYs) {
		if len(l.Seconds) == 0 {
			return "", nil
		}
		s := slices.Sorted(slices.Values(l.Seconds))
		lo, hi = math.Min(lo, math.Max(s[0], 0.001)), math.Max(hi, math.Max(s[len(s)-1], 0.001))
		xys := plotter.XYs{{X: math.Max(s[0], 0.001), Y: 0}}
		for k, v := range s {
			xys = append(xys, plotter.XY{X: math.Max(v, 0.001), Y: float64(k+1) / float64(len(s))})
		}
		return fmt.Sprintf("%s (%d jobs)", l.Label, len(s)), xys
	})
	if err != nil || hi == 0 { // hi stays 0 when no series had a job to draw
		return err
	}
	logRange(&p.X, lo, hi)
	return nil
}

// drawRequests bins each run's per-second counts by the minute (by 10 s for a run shorter than
// ten minutes, scaled to a minute, so a one-minute run still shows a curve).
func drawRequests(p *plot.Plot, parts []Part) error {
	return lines(p, parts, func(part Part) []Requests { return part.Requests }, false, func(r Requests) (string, plotter.XYs) {
		bin := 60
		if len(r.PerSecond) < 600 {
			bin = 10
		}
		var xys plotter.XYs
		for at := 0; at < len(r.PerSecond); at += bin {
			n, end := 0, min(at+bin, len(r.PerSecond))
			for _, c := range r.PerSecond[at:end] {
				n += c
			}
			y := float64(n) * 60 / float64(end-at) // a bin is level from its start to its end
			xys = append(xys, plotter.XY{X: float64(at) / 60, Y: y}, plotter.XY{X: float64(end) / 60, Y: y})
		}
		return fmt.Sprintf("%s (%d s bins)", r.Label, bin), xys
	})
}

// drawRSSTargets is each daemon's largest RSS against its number of targets.
func drawRSSTargets(p *plot.Plot, parts []Part) error {
	var xys plotter.XYs
	for _, part := range parts {
		for _, r := range part.RSS {
			xys = append(xys, plotter.XY{X: float64(max(r.Targets, 1)), Y: mib(r.MaxKiB)})
		}
	}
	slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
	logRange(&p.X, xys[0].X, xys[len(xys)-1].X)
	lp, sc, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	lp.Color, sc.Color = plotutil.Color(0), plotutil.Color(0)
	p.Add(lp, sc)
	p.Legend.Add("RSS max in the window", lp, sc)
	return nil
}

// drawRSSTime is each daemon's RSS, one reading a second.
func drawRSSTime(p *plot.Plot, parts []Part) error {
	return lines(p, parts, func(part Part) []RSS { return part.RSS }, false, func(r RSS) (string, plotter.XYs) {
		xys := make(plotter.XYs, len(r.KiB))
		for k, v := range r.KiB {
			xys[k] = plotter.XY{X: float64(k) / 60, Y: mib(v)}
		}
		return r.Label, xys
	})
}

func mib(kib int) float64 { return float64(kib) / 1024 }
