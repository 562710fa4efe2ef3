package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/runner-manager/runner-manager/bench"
	"github.com/runner-manager/runner-manager/config"
)

// validateRun is one `runner-manager validate` of a generated file, timed and measured as a process.
type validateRun struct {
	Format  string
	Targets int
	Bytes   int
	Took    time.Duration
	MaxRSS  int64 // KiB, getrusage ru_maxrss of the child
}

// runValidate runs the real binary's validate on 1,000- and 10,000-target files in TOML and YAML,
// as CI does on every pull request that touches the config.
func (e env) runValidate() ([]validateRun, error) {
	dir := filepath.Join(e.dir, "validate")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("ghp_bench\n"), 0o600); err != nil {
		return nil, err
	}
	var out []validateRun
	for _, format := range []string{"toml", "yaml"} {
		for _, n := range []int{1000, 10000} {
			s := bench.Setup{StateDir: filepath.Join(dir, "state"), APIURL: "http://127.0.0.1:1", TokenFile: token,
				Targets: n, HostMax: config.MaxRunnersLimit, TargetMax: 1, PollInterval: 30 * time.Second}
			data := s.Render(format)
			path := filepath.Join(dir, fmt.Sprintf("config-%d.%s", n, format))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return nil, err
			}
			cmd := exec.Command(filepath.Join(e.bin, "runner-manager"), "validate", "--config", path)
			t0 := time.Now()
			if b, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("validate %s: %w\n%s", path, err, b)
			}
			r := validateRun{Format: format, Targets: n, Bytes: len(data), Took: time.Since(t0)}
			r.MaxRSS = maxRSSKiB(cmd.ProcessState)
			out = append(out, r)
		}
	}
	return out, nil
}

func (r results) renderValidate(p printer) {
	p("## 7. `runner-manager validate` of large files\n\n")
	p("The real binary (`bin/runner-manager validate --config FILE`) on generated files (`bench.Setup`: one\n")
	p("repository target per entry, one label each), as a process: wall time from exec to exit, and the\n")
	p("child's peak RSS (getrusage `ru_maxrss`). The goal is under 1 s and 100 MB at 10,000 targets. The\n")
	p("in-process cost of the same `config.Load` is `BenchmarkValidate` in `bench/` (figure rows below).\n\n")
	p("| format | targets | file size | wall time | peak RSS | command |\n|---|---|---|---|---|---|\n")
	for _, v := range r.Validate {
		p("| %s | %d | %.0f KiB | %s | %.1f MiB | `%s -only validate` |\n", v.Format, v.Targets, float64(v.Bytes)/1024, secs(v.Took), float64(v.MaxRSS)/1024, r.self())
	}
	p("\n")
	r.rows(p, []goRow{
		{"config.Load, TOML, 1,000 targets", "BenchmarkValidate/toml/targets=1000", "ns/op", "ms", nsToMs},
		{"config.Load, TOML, 10,000 targets", "BenchmarkValidate/toml/targets=10000", "ns/op", "ms", nsToMs},
		{"config.Load, YAML, 1,000 targets", "BenchmarkValidate/yaml/targets=1000", "ns/op", "ms", nsToMs},
		{"config.Load, YAML, 10,000 targets", "BenchmarkValidate/yaml/targets=10000", "ns/op", "ms", nsToMs},
		{"allocated by config.Load, TOML, 10,000 targets", "BenchmarkValidate/toml/targets=10000", "B/op", "MiB", 1.0 / (1 << 20)},
		{"allocated by config.Load, YAML, 10,000 targets", "BenchmarkValidate/yaml/targets=10000", "B/op", "MiB", 1.0 / (1 << 20)},
	})
	p("Positions in TOML come from one pass over go-toml's parse with a line index (they used to be\n")
	p("quadratic: 62 s for 10,000 targets).\n\n")
}
