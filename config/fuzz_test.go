package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The loader's promise under arbitrary input: no panic, and every rejection is a *Error whose
// problems all point at a line of the file (the environment is empty here).

func FuzzLoadTOML(f *testing.F) { fuzzLoad(f, "fuzz.toml", "*.toml") }

func FuzzLoadYAML(f *testing.F) { fuzzLoad(f, "fuzz.yaml", "*.y*ml") }

func fuzzLoad(f *testing.F, name, glob string) {
	for _, dir := range []string{"../examples", "../examples/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, seed := range []string{
		"daemon: {max_runners: 2}\ntarget:\n  - &t {name: a, repository: o/a}\n  - <<: *t\n    name: b\n",
		"[[target]]\nname = 'a'\n[target.env]\nA = 'x'\n[[target]]\nname = 'b'\n",
		"target = [{ name = \"a\", labels = [\"x\", 1] }]\n",
		"[daemon]\nmemory_max = '1.5GiB'\ncpus = 1.5\npids_max = 4096\nmin_free_disk = 0\n[[target]]\nname = 'a'\nmemory_max = 536870912\n",
		"daemon: {memory_max: 20GB, cpus: 2}\ntarget:\n  - {name: a, repository: o/a, pids_max: 64, min_free_disk: 1TiB}\n",
	} {
		f.Add([]byte(seed))
	}
	opts := Options{Environ: func() []string { return nil }}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadBytes(name, data, opts)
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("rejection is not a *config.Error: %v", err)
		}
		if len(ce.Errors()) == 0 {
			t.Fatalf("rejected without an error-severity problem: %v", err)
		}
		for _, p := range ce.Problems {
			if p.Line < 1 || p.Col < 1 {
				t.Fatalf("unpositioned problem %+v", p)
			}
		}
	})
}
