package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// goBench is one `go test -bench` invocation; its output is parsed into results by name.
type goBench struct {
	Args   []string
	Output string
}

func (g goBench) command(goTool string) string {
	return goTool + " " + strings.Join(quoteArgs(g.Args), " ")
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$*|() ") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func (g *goBench) run(goTool, dir string) error {
	cmd := exec.Command(goTool, g.Args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	g.Output = string(out)
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", g.command(goTool), err, out)
	}
	return nil
}

// benchResult is one line of benchmark output: name (without the -GOMAXPROCS suffix),
// iterations, and every "value unit" pair.
type benchResult struct {
	Name    string
	N       int
	Metrics map[string]float64
}

func parseBench(out string) map[string]benchResult {
	res := map[string]benchResult{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		r := benchResult{Name: name, N: n, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			r.Metrics[f[i+1]] = v
		}
		res[name] = r
	}
	return res
}
