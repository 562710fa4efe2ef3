package main

import (
	"fmt"
	"time"

	"github.com/runner-manager/runner-manager/bench/figures"
)

// memoryRun is the idle1000-30m part: RSS of a daemon with many idle targets over a long run,
// read at every mark (issue 28 item 5: memory must stay flat once the first reads are paid).
type memoryRun struct {
	Targets      int
	Poll, Window time.Duration
	Every        time.Duration
	Marks        []usage       // at Every, 2 x Every, ... Window after the start
	RSSMax       int           // KiB, sampled every second over the whole run
	RSSSeries    []int         // KiB, every second of the run (the RSS-over-time figure)
	PerSecond    []int         // requests in each second of the run
	Reread       time.Duration // when every repository had been read a second time (0: never)
}

// memoryParts are the long memory runs: part name -> targets.
var memoryParts = map[string]int{"idle1000-30m": 1000}

// memoryGoal: RSS within 5% between minute 10 and the end, and at most this many KiB throughout.
const (
	memoryFlatFrom = 10 * time.Minute
	memoryMaxKiB   = 50 * 1024
)

func (e env) runMemory(targets int, poll, window, every time.Duration) (memoryRun, error) {
	r := memoryRun{Targets: targets, Poll: poll, Window: window, Every: every}
	i, err := e.startIdle(fmt.Sprintf("memory-%d", targets), targets, poll)
	if err != nil {
		return r, err
	}
	defer e.closeIdle(i)
	w, d, started := i.w, i.d, i.started
	next := started.Add(every)
	stop := w.requestSampler()
	for time.Since(started) < window {
		time.Sleep(time.Second)
		u, err := readUsage(d.PID())
		if err != nil {
			stop()
			return r, err
		}
		r.RSSMax, r.RSSSeries = max(r.RSSMax, u.RSSKiB), append(r.RSSSeries, u.RSSKiB)
		if r.Reread == 0 && w.count.snapshot().RereadRepos >= targets {
			r.Reread = time.Since(started)
		}
		if !u.At.Before(next) {
			r.Marks = append(r.Marks, u)
			e.log("  %s: RSS %.1f MiB", u.At.Sub(started).Round(time.Minute), float64(u.RSSKiB)/1024)
			next = next.Add(every)
		}
	}
	r.PerSecond = stop()
	for i := range r.Marks {
		r.Marks[i].At = started.Add(time.Duration(i+1) * every) // the mark, not the second it was read
	}
	return r, nil
}

// at is the RSS read at the mark d after the start, if the run reached it.
func (m memoryRun) at(d time.Duration) (int, bool) {
	if i := int(d/m.Every) - 1; d%m.Every == 0 && i >= 0 && i < len(m.Marks) {
		return m.Marks[i].RSSKiB, true
	}
	return 0, false
}

// flat says whether RSS stayed within 5% of its minute-10 reading until the end, and the change.
func (m memoryRun) flat() (change float64, ok bool) {
	from, ok1 := m.at(memoryFlatFrom)
	to, ok2 := m.at(m.Window)
	if !ok1 || !ok2 || from == 0 {
		return 0, false
	}
	return 100 * float64(to-from) / float64(from), true
}

func (r results) renderMemory(p printer) {
	p("## 13. Memory over time: idle targets for 30 minutes\n\n")
	p("One daemon with idle repository targets (no queued job, `min_idle` 0, the default governor ceiling of\n")
	p("600 points/min, which spreads the first reads of 1,000 targets over about 7 minutes and stretches\n")
	p("their interval), `/proc/<pid>/status` VmRSS read every second and shown at every mark from the start.\n")
	p("Goal (issue 28): RSS within 5%% between minute 10 and the end, and at most 50 MiB throughout.\n\n")
	p("| targets | poll_interval | every repository read twice after | RSS at each mark | RSS max | change from minute 10 to the end | goal | command |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.Memory {
		marks := ""
		for i, u := range m.Marks {
			if i > 0 {
				marks += ", "
			}
			marks += fmt.Sprintf("%s %.1f MiB", time.Duration(i+1)*m.Every, float64(u.RSSKiB)/1024)
		}
		reread := "not within the run"
		if m.Reread > 0 {
			reread = m.Reread.Round(time.Second).String()
		}
		change, measured := m.flat()
		changeText, met := "not measured (the run ended before its last mark)", "not measured"
		if measured {
			changeText = fmt.Sprintf("%+.1f %%", change)
			met = map[bool]string{true: "met", false: "**not met**"}[change <= 5 && change >= -5 && m.RSSMax <= memoryMaxKiB]
		}
		p("| %d | %s | %s | %s | %.1f MiB | %s | %s | `%s -only idle%d-30m` |\n", m.Targets, m.Poll, reread, marks,
			float64(m.RSSMax)/1024, changeText, met, r.self(), m.Targets)
	}
	p("\n")
	figure(p, figures.RSSTimeFile, "the daemon's RSS read every second, by run (this 30-minute run with the idle windows of section 3)")
	p("What the RSS holds (heap profiles and `/proc/<pid>/status` of the daemon at 1,000 idle targets, issue 28):\n")
	p("the live heap stays at about 9 MiB from minute 3 on, the 1,000 target loops' stacks are about 4-5 MiB,\n")
	p("and the binary's own mapped pages (RssFile) about 25 MiB. A loop runs each pass on a goroutine of its\n")
	p("own and parks on a 4 KiB stack (docs/operations.md, Memory); when the loops ran their passes themselves\n")
	p("they kept the 8-16 KiB a pass grew, 9-14 MiB of stacks, and RSS was 49.6 MiB at minute 10 and 51.8 MiB\n")
	p("at minute 30. The daemon collects at `GOGC=25`: Go counts goroutine stacks in its collection goal, and\n")
	p("with those larger stacks the default 100 let the heap grow to 30-36 MiB and RSS to 66.3 MiB at minute\n")
	p("10, still rising.\n\n")
	p("This part runs for its whole window (`-memory-window`, 30 minutes), so it adds 30 minutes to `make bench`.\n\n")
}
