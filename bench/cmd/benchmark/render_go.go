package main

import (
	"fmt"
	"strings"
)

// goRow is one figure row read off a benchmark metric.
type goRow struct {
	what, bench, metric, unit string
	scale                     float64 // multiplies the metric into unit
}

func (r results) lookup(name string) (benchResult, string, bool) {
	for _, g := range r.Go {
		if res, ok := parseBench(g.Output)[name]; ok {
			return res, g.command(r.GoTool), true
		}
	}
	return benchResult{}, "", false
}

func (r results) rows(p printer, rows []goRow) {
	p("| figure | value | unit | benchmark (iterations) | command |\n|---|---|---|---|---|\n")
	for _, row := range rows {
		res, cmd, ok := r.lookup(row.bench)
		v, has := res.Metrics[row.metric]
		if !ok || !has {
			p("| %s | not measured | | %s | |\n", row.what, row.bench)
			continue
		}
		p("| %s | %s | %s | %s (%d) | `%s` |\n", row.what, trimFloat(v*row.scale), row.unit, row.bench, res.N, cmd)
	}
	p("\n")
}

func trimFloat(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

const nsToMs = 1e-6

func (r results) renderGo(p printer) {
	if _, _, ok := r.lookup("BenchmarkReload1000"); ok {
		p("## 4. Config reload with 1,000 targets\n\n")
		p("The daemon's reload path on a generated 1,000-target file with one target's `max_runners` edited:\n")
		p("`config.Load` (parse, schema, validate) then `engine.Supervisor.Apply`, on in-memory fakes\n")
		p("(`enginetest` journal and fake clock, GitHub and launcher fakes that answer at once).\n\n")
		r.rows(p, []goRow{
			{"reload, load + apply", "BenchmarkReload1000", "ns/op", "ms", nsToMs},
			{"config.Load of the 1,000-target file", "BenchmarkReload1000", "load-ms/op", "ms", 1},
			{"Supervisor.Apply", "BenchmarkReload1000", "apply-ms/op", "ms", 1},
			{"targets changed in place (Report.Changed)", "BenchmarkReload1000", "changed/op", "loops", 1},
			{"loops restarted, added or removed", "BenchmarkReload1000", "restarted/op", "loops", 1},
			{"targets unchanged (Report.Unchanged)", "BenchmarkReload1000", "unchanged/op", "loops", 1},
			{"loop passes woken by the reload", "BenchmarkReload1000", "passes-woken/op", "passes", 1},
			{"Apply until the concerned loops' passes ran", "BenchmarkReload1000", "wake-settle-ms/op", "ms", 1},
		})
		res, _, _ := r.lookup("BenchmarkReload1000")
		if woken, ok := res.Metrics["passes-woken/op"]; ok && woken > 1.5 {
			p("No loop is restarted by a one-target edit, but Apply wakes %.0f loops for a pass (each pass reads\n", woken)
			p("GitHub: a runners list and the queued runs, conditional requests). Parsing and validating the\n")
			p("file dominates the reload time.\n\n")
		} else {
			p("A one-target edit restarts no loop and runs a pass of the edited target only; the other loops\n")
			p("read the new snapshot on their own schedule. Parsing and validating the file dominates the\n")
			p("reload time.\n\n")
		}
	}
	if _, _, ok := r.lookup("BenchmarkLaunchFromCache"); ok {
		p("## 5. Runner launch from cache: JIT issued -> process started\n\n")
		p("`internal/runner` on a cached fake runner package: `Launcher.Prepare` (hardlink the cached package\n")
		p("into a fresh runtime directory) then `Launcher.Start` (first-stage shim, detached supervising shim,\n")
		p("JIT config over a pipe, `run.sh` exec'd, start confirmed). The shim is the benchmark binary itself,\n")
		p("as the daemon re-executes its own binary.\n\n")
		r.rows(p, []goRow{
			{"launch p50 (prepare + start)", "BenchmarkLaunchFromCache", "launch-p50-ms", "ms", 1},
			{"launch p95", "BenchmarkLaunchFromCache", "launch-p95-ms", "ms", 1},
			{"launch mean", "BenchmarkLaunchFromCache", "ns/op", "ms", nsToMs},
			{"prepare p50 / materialise", "BenchmarkLaunchFromCache", "prepare-p50-ms", "ms", 1},
			{"prepare p95", "BenchmarkLaunchFromCache", "prepare-p95-ms", "ms", 1},
			{"start p50 / shim confirmed", "BenchmarkLaunchFromCache", "start-p50-ms", "ms", 1},
			{"start p95", "BenchmarkLaunchFromCache", "start-p95-ms", "ms", 1},
		})
		p("Starting processes (two shim stages and the runner) is the cost; materialising the package by\n")
		p("hardlinks is small.\n\n")
	}
	_, _, journal := r.lookup("BenchmarkTransitionSynced")
	_, _, recovery := r.lookup("BenchmarkRecovery10000/live=100/adopt")
	if journal || recovery { // not with -only validate, say: its rows would all read "not measured"
		p("## 6. Journal: synced transition and recovery of 10,000 attempts\n\n")
		r.rows(p, []goRow{
			{"one synced transition (one pebble batch, fsync)", "BenchmarkTransitionSynced", "ns/op", "ms", nsToMs},
			{"journal Open + Live, 10,000 attempts all live", "BenchmarkLive10000/live=10000", "ns/op", "ms", nsToMs},
			{"journal Open + Live, 10,000 attempts, 100 live", "BenchmarkLive10000/live=100", "ns/op", "ms", nsToMs},
			{"engine recovery, 10,000 attempts (100 live, 1 per target, 100 targets; 9,900 concluded): adopted", "BenchmarkRecovery10000/live=100/adopt", "ns/op", "ms", nsToMs},
			{"engine recovery, 10,000 attempts (100 live): live ones exited, concluded", "BenchmarkRecovery10000/live=100/conclude", "ns/op", "ms", nsToMs},
			{"engine recovery, 10,000 live attempts (10 targets x 1,000), adopted: worst case", "BenchmarkRecovery10000/live=10000/adopt", "ns/op", "ms", nsToMs},
			{"engine recovery on pebble, 1,000 live attempts (10 targets x 100), adopted", "BenchmarkRecoveryPebble1000/adopt", "ns/op", "ms", nsToMs},
			{"engine recovery on pebble, 1,000 live attempts, concluded", "BenchmarkRecoveryPebble1000/conclude", "ns/op", "ms", nsToMs},
		})
		p("Engine recovery is timed from `Supervisor.Run` until every target loop has finished its first\n")
		p("(recovery) pass, with GitHub and the launcher faked. `BenchmarkRecovery10000` uses the in-memory\n")
		p("`enginetest` journal (its cost is the engine's plus the fake's copy and sort of the live set);\n")
		p("`BenchmarkRecoveryPebble1000` the real synced journal (concluding = three synced transitions per\n")
		p("attempt). Every pass of every loop reads the whole live set (`Journal.Live`, three times a pass),\n")
		p("so recovery grows with targets x live attempts. The pebble journal was not seeded with 10,000\n")
		p("attempts: through its public API (each Plan scans the live index, each write fsyncs) that takes\n")
		p("minutes; its read share at 10,000 is the Open + Live rows above. Each row is one iteration on a\n")
		p("shared machine: compare orders of magnitude, not digits.\n\n")
	}
	if len(r.Validate) > 0 { // -only validate runs BenchmarkValidate too: its section comes with the Go part's
		r.renderValidate(p)
	}
	p("<details><summary>Raw benchmark output</summary>\n\n")
	for _, g := range r.Go {
		p("`%s`\n\n```\n%s\n```\n\n", g.command(r.GoTool), strings.TrimSpace(g.Output))
	}
	p("</details>\n")
}
